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

    public init() {}
}
