/// The answer of `Database.failover(to:)`: the node that leads once the switchover is done.
public struct FailoverResult: Sendable, Equatable {
    /// The new leader's node name.
    public let leader: String
    /// Its leadership's epoch.
    public let epoch: Int64
}
