/// What a node is doing, as its member key says (docs/cluster.md, "etcd layout").
public enum MemberState: String, Sendable, Equatable, CaseIterable {
    /// A replica that is not yet streaming from the leader (or has no leader to stream from).
    case catchingUp = "catching_up"
    /// A replica that receives the leader's records as they are committed.
    case streaming
    /// The leader, accepting writes.
    case leader
    /// The leader handing over (switchover) or losing its proof of leadership.
    case steppingDown = "stepping_down"
    /// A node campaigning for leadership.
    case candidate
}

/// A node's role in the cluster.
public enum ClusterRole: String, Sendable, Equatable {
    /// Holds the leader key (and, while its proof lasts, accepts writes).
    case leader
    /// Follows the leader, or waits for one.
    case replica
    /// Campaigns for the leader key.
    case candidate
}
