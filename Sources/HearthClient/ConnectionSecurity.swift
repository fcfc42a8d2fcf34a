import NIOSSL

/// The security state of a repo's connection, confined to the repo's event loop: the
/// credential presented on every new connection, whether requests wait for an `auth` in the
/// making, the TLS context, and why the last TLS handshake failed.
struct ConnectionSecurity {
    /// What the client authenticates with on each new connection.
    enum Credential: Equatable {
        /// `Configuration.tokenProvider`'s answer (none when there is no provider or it
        /// answers nil).
        case provider
        /// The token last accepted by `Database.auth(token:)`.
        case token(String)
        /// `Database.unauth()` succeeded: stay unauthenticated until the next `auth(token:)`.
        case signedOut
    }

    /// Whether requests may go out now.
    enum Phase {
        /// Everything goes out as it comes.
        case ready
        /// A new connection waits for the token provider: user requests join the offline
        /// queue, and session requests (subscribe, onDisconnect) are dropped, because the
        /// connection's state is rebuilt once the `auth` is sent.
        case connecting
        /// After `auth_revoked`, waiting for a fresh token: everything is held, in order.
        case reauthenticating
    }

    var credential = Credential.provider
    var phase = Phase.ready
    /// Requests held while `reauthenticating`, sent after the `auth`.
    var held: [Outgoing] = []
    /// Counts token requests: a provider's answer to an older request is dropped.
    var generation = 0
    /// The TLS context of `hearths://` connections, made on first use.
    var tlsContext: NIOSSLContext?
    /// Why the current connection's TLS handshake failed, for its connection error.
    var channelFailure: HearthError?
}
