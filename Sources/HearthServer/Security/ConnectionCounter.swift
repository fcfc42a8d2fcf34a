import NIOConcurrencyHelpers

/// Open connections in all and per remote address, for `maxConnections` and
/// `maxConnectionsPerAddress` (which spares loopback unless `limitLoopback`).
final class ConnectionCounter: Sendable {
    private struct Counts {
        var total = 0
        var byAddress: [String: Int] = [:]
    }

    private let counts = NIOLockedValueBox(Counts())

    /// Why a new connection from `address` must be turned away, or nil after counting it in.
    func admit(_ address: String, isLoopback: Bool, limits: ProtectionLimits) -> String? {
        counts.withLockedValue { counts in
            if counts.total >= limits.maxConnections {
                return "the server has reached its limit of \(limits.maxConnections) connections (maxConnections)"
            }
            let fromAddress = counts.byAddress[address] ?? 0
            if !isLoopback || limits.limitLoopback, fromAddress >= limits.maxConnectionsPerAddress {
                return
                    "\(address) already has \(fromAddress) connections open (maxConnectionsPerAddress is \(limits.maxConnectionsPerAddress))"
            }
            counts.total += 1
            counts.byAddress[address] = fromAddress + 1
            return nil
        }
    }

    func release(_ address: String) {
        counts.withLockedValue { counts in
            counts.total -= 1
            let left = (counts.byAddress[address] ?? 1) - 1
            counts.byAddress[address] = left > 0 ? left : nil
        }
    }
}
