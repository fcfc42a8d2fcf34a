/// The state of the connection, for programs that must tell "no server there" from "slow".
extension Database {
    /// Waits until the client is connected (the server's hello has arrived; `.info/connected`
    /// is `true`). Returns at once when it already is.
    ///
    /// Throws the `HearthError` of the first connection attempt that fails after the call, or of
    /// the latest attempt when it has already failed: `connection_refused` (nothing listens at
    /// that host and port), `unknown_host` (the host name does not resolve) or
    /// `connection_failed` (a timeout, an unreachable network, a connection closed before the
    /// hello, or `goOffline()`). The client keeps reconnecting whatever this reports.
    public func waitForConnection() async throws {
        let result = await withCheckedContinuation { continuation in
            repo.waitForConnection { continuation.resume(returning: $0) }
        }
        try result.get()
    }

    /// Why the latest connection attempt failed, or nil while connected and before any attempt
    /// has failed.
    public func connectionError() async -> HearthError? {
        try? await repo.lastConnectionError.get()
    }
}

extension Database {
    /// The version of HearthClient (the same as the server's of this release), as Firebase's
    /// `Database.sdkVersion()`.
    public static let sdkVersion = "0.1.0"
}
