import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The limits that protect the server from abuse (docs/security.md, limits). Each default is far
/// above what a normal app reaches; each limit answers with a clear error and loses nothing.
public struct ProtectionLimits: Sendable, Equatable {
    /// Open connections in all (`maxConnections`). Unless set, derived from the process's
    /// open-files limit when the limits are made (`derivedMaxConnections`), so that this limit
    /// refuses a connection before the descriptors run out.
    public var maxConnections = ProtectionLimits.derivedMaxConnections(openFileLimit: openFileLimit())
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
    /// Close a TLS connection (either listener) whose handshake has not completed within this
    /// many seconds of its accept (`tlsHandshakeTimeoutSeconds`, 1–3600).
    public var tlsHandshakeTimeoutSeconds = 10

    public init() {}

    /// The largest `maxConnections` default, whatever the open-files limit.
    public static let maxConnectionsCeiling = 100_000
    /// The smallest `maxConnections` default, whatever the open-files limit.
    public static let maxConnectionsFloor = 64
    /// Descriptors kept out of `maxConnections` at the least: data files, the log, the listeners,
    /// the event loops' own descriptors, etcd and peer connections, and the socket of a
    /// connection that is accepted only to be refused.
    public static let reservedDescriptors = 64

    /// The `maxConnections` default for an open-files limit of `openFileLimit` descriptors:
    /// 80 % of it, leaving at least `reservedDescriptors` for everything that is not a client
    /// connection, between `maxConnectionsFloor` and `maxConnectionsCeiling`. nil (no limit
    /// known, or unlimited) gives the ceiling.
    public static func derivedMaxConnections(openFileLimit: Int?) -> Int {
        let allowed = connectionsWithinDescriptors(openFileLimit: openFileLimit) ?? maxConnectionsCeiling
        return min(maxConnectionsCeiling, max(maxConnectionsFloor, allowed))
    }

    /// Connections the open-files limit `openFileLimit` leaves room for once
    /// `reservedDescriptors` (or a fifth, if more) are kept for everything else; nil: no bound known.
    static func connectionsWithinDescriptors(openFileLimit: Int?) -> Int? {
        openFileLimit.map { $0 - max(reservedDescriptors, $0 / 5) }
    }

    /// Raises this process's open-files limit (soft `RLIMIT_NOFILE`) to its hard limit, at most
    /// `1 << 20`, as `hearthd` does before reading its settings; returns the limit now in force.
    @discardableResult
    public static func raiseOpenFileLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(nofile, &limit) == 0 else { return nil }
        let target = min(limit.rlim_max, rlim_t(1 << 20))
        if limit.rlim_cur != unlimited, limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(nofile, &limit)
        }
        return openFileLimit()
    }

    #if canImport(Glibc)
    private static let nofile = Int32(RLIMIT_NOFILE.rawValue)
    /// glibc's `RLIM_INFINITY` (all bits set), which Swift does not import.
    private static let unlimited = rlim_t.max
    #else
    private static let nofile = RLIMIT_NOFILE
    private static let unlimited = RLIM_INFINITY
    #endif

    /// This process's open-files limit (the soft `RLIMIT_NOFILE`); nil when it cannot be read or
    /// is unlimited.
    public static func openFileLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(nofile, &limit) == 0, limit.rlim_cur != unlimited else { return nil }
        return Int(clamping: limit.rlim_cur)
    }
}

extension ProtectionLimits {
    /// The window over which a request body's (or an unfinished line's) pace is judged: ten
    /// seconds, or the first-request timeout when shorter.
    var paceWindow: TimeAmount { min(.seconds(10), .seconds(Int64(firstRequestTimeoutSeconds))) }

    /// Whether `bytes` arriving in one `paceWindow` is slower than `minBodyBytesPerSecond` (at
    /// least one byte a window is always required).
    func isTooSlow(_ bytes: Int) -> Bool {
        Int64(bytes) < max(1, Int64(minBodyBytesPerSecond) * paceWindow.nanoseconds / 1_000_000_000)
    }
}
