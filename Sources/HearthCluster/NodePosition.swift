/// Where a node's log stands, as the election needs it (docs/cluster.md, "Election and fencing"). The coordinator asks
/// the server for it whenever it campaigns or refreshes its member key.
public struct NodePosition: Sendable, Equatable {
    /// The last rev in the node's log.
    public var rev: UInt64
    /// The epoch of that record.
    public var lastEpoch: UInt64
    /// The highest `confirmedRev` the node saw from a leader.
    public var confirmedRevSeen: UInt64

    /// A position with every field given.
    public init(rev: UInt64, lastEpoch: UInt64, confirmedRevSeen: UInt64) {
        self.rev = rev
        self.lastEpoch = lastEpoch
        self.confirmedRevSeen = confirmedRevSeen
    }
}
