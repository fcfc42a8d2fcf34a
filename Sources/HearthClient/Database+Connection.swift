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

    /// Why the latest connection attempt failed, or the error the server gave when it closed the
    /// last connection (`slow_consumer`, …); nil while connected and before any attempt has
    /// failed. `waitForConnection()` throws it too while the client waits to reconnect.
    public func connectionError() async -> HearthError? {
        try? await repo.lastConnectionError.get()
    }

    /// The bytes received from the server so far, on every connection of this client, counted as
    /// they arrive (before a line is complete). It grows while a large answer or event is still
    /// arriving, so a caller that bounds a request's time can wait as long as it does: the CLI's
    /// `--timeout` fails a request only when nothing arrived for that long.
    public var bytesReceived: UInt64 { repo.received.withLockedValue { $0 } }

    /// The bytes sent to the server so far (counted once the socket took them): it grows while a
    /// large request (a big `setValue`) is still being sent.
    public var bytesSent: UInt64 { repo.sent.withLockedValue { $0 } }
}

extension Database {
    /// The version of HearthClient (the same as the server's of this release), as Firebase's
    /// `Database.sdkVersion()`.
    public static let sdkVersion = "0.1.0"
}
