/// The limits that protect the server from abuse (security.md §6). Each default is far above
/// what a normal app reaches; each limit answers with a clear error and loses nothing.
public struct ProtectionLimits: Sendable, Equatable {
    /// Open connections in all (`maxConnections`).
    public var maxConnections = 100_000
    /// Open connections from one remote address; loopback is exempt unless `limitLoopback`
    /// (`maxConnectionsPerAddress`).
    public var maxConnectionsPerAddress = 1_000
    /// Live subscriptions of one connection (`maxSubscriptionsPerConnection`).
    public var maxSubscriptionsPerConnection = 10_000
    /// Sustained writes per second of one connection, with bursts of twice as many
    /// (`maxWritesPerSecondPerConnection`; 0 turns the limit off).
    public var maxWritesPerSecondPerConnection = 10_000
    /// Sustained writes per second from one remote address over all its connections and both
    /// protocols, with bursts of twice as many; loopback is exempt unless `limitLoopback`
    /// (`maxWritesPerSecondPerAddress`; 0 turns the limit off).
    public var maxWritesPerSecondPerAddress = 20_000
    /// Applies the per-address limits (`maxConnectionsPerAddress`, `maxWritesPerSecondPerAddress`)
    /// to loopback clients too: for a server behind a proxy on the same machine, where every
    /// client arrives from loopback (`limitLoopback`).
    public var limitLoopback = false
    /// With rules on: close a connection that has not authenticated within this many seconds
    /// (`authTimeoutSeconds`; 0 is off).
    public var authTimeoutSeconds = 0
    /// Failed `auth` attempts one address may make per minute (`maxFailedAuthPerMinute`).
    public var maxFailedAuthPerMinute = 20
    /// Bytes the server holds for all its clients together: output written but not yet taken
    /// by the peer, and request bodies and unfinished request lines being read
    /// (`maxBufferedBytes`). Past it, reading pauses and the largest holders are cut.
    public var maxBufferedBytes = 256 * 1024 * 1024
    /// A connection whose unsent output has not moved for this long is closed
    /// (`writeStallTimeoutSeconds`).
    public var writeStallTimeoutSeconds = 30
    /// A new connection must send its first whole request (an HTTP head, a line) within this
    /// long, and an HTTP request's head must arrive whole within it (`firstRequestTimeoutSeconds`).
    public var firstRequestTimeoutSeconds = 30
    /// An HTTP keep-alive connection may wait this long for its next request
    /// (`idleTimeoutSeconds`).
    public var idleTimeoutSeconds = 60
    /// The slowest a request body (or an unfinished line-protocol line) may arrive, judged over
    /// windows of ten seconds (`minBodyBytesPerSecond`).
    public var minBodyBytesPerSecond = 1024
    /// With rules, the largest body (or line) a caller who has not signed in may send: anything
    /// larger is refused before it is read (`maxUnauthenticatedBodyBytes`).
    public var maxUnauthenticatedBodyBytes = 256 * 1024

    public init() {}
}
