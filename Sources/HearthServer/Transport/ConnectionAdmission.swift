import NIOCore

/// A connection's place under the connection limits (`maxConnections`,
/// `maxConnectionsPerAddress`), the same for every transport: where it comes from, whether it was
/// counted in (and so must be counted out at close), and the write limits of its address. What a
/// refused connection is told is the transport's own. Confined to the connection's event loop.
struct ConnectionAdmission {
    /// The remote IP address (without port), for per-address limits and logs; "?" until the
    /// connection is active, and for a peer without an IP address (a Unix socket).
    private(set) var remoteAddress = "?"
    /// Counted in `security.connections`.
    private(set) var isCounted = false

    /// What `admit` decided.
    struct Decision {
        /// Why the connection may not be served; nil when it was counted in.
        let refusal: String?
        /// The connection's write limits (nil when none applies).
        let writeLimits: WriteLimits?
    }

    /// Counts in the connection from `address`, unless a limit refuses it. A peer on loopback,
    /// or without an IP address, counts as local (spared the per-address limits).
    mutating func admit(_ address: SocketAddress?, security: SecurityState) -> Decision {
        remoteAddress = address?.ipAddress ?? "?"
        let local = isLoopback(remoteAddress) || remoteAddress == "?"
        let refusal = security.connections.admit(remoteAddress, isLoopback: local, limits: security.limits)
        isCounted = refusal == nil
        return Decision(
            refusal: refusal, writeLimits: WriteLimits(security: security, address: remoteAddress, isLoopback: local))
    }

    /// Counts the connection out, once; true when it had been counted in.
    mutating func release(from security: SecurityState) -> Bool {
        guard isCounted else { return false }
        isCounted = false
        security.connections.release(remoteAddress)
        return true
    }
}
