import HearthCluster
import HearthCore
import HearthJSON
import HearthStorage
import NIOCore

/// What the engine asks of the cluster node it belongs to (`ClusterNode`): the leadership proof
/// before acknowledging, a peer connection to a leader, and the coordinator's view for status and
/// switchover. Called on the engine thread; implementations must be cheap and thread-safe.
package protocol ClusterHooks: AnyObject, Sendable {
    /// The shared secret peers authenticate with (nil: none, loopback only).
    var secret: String? { get }
    /// True while this node leads and its lease is provably alive (docs/cluster.md, "Election and fencing").
    func hasLeadershipProof() -> Bool
    /// Opens a peer connection to `leader` replicating from `fromRev`; its messages come back as
    /// `Submission.cluster(.link(…))`.
    /// `firstLines` go right after `replicate`, before anything else on the link.
    func openLink(
        id: UInt64, leader: String, fromRev: UInt64, history: EpochHistory, firstLines: [[UInt8]]
    ) -> any LeaderLink
    /// The engine's position changed (role, rev, confirmed rev): published to the member key.
    func positionChanged(role: EngineRole, rev: UInt64, lastEpoch: UInt64, confirmedRev: UInt64, state: MemberState)
    /// The members as the coordinator last saw them, for `clusterStatus`.
    func members() -> [MemberInfo]
    /// True while no live member may lead without losing an acknowledged write.
    var noEligibleLeader: Bool { get }
    /// Sends `line` to every line-protocol connection of this node (not to peers).
    func broadcast(_ line: [UInt8])
    /// The names of the members whose leases are alive.
    func liveMembers() -> [String]
    /// The `cluster` object of `hello` and of `cluster` events.
    func clusterObject(role: EngineRole, rev: UInt64) -> JSONValue
    /// Switchover (docs/cluster.md, "Switchover"): releases leadership to `target` once it has every record;
    /// `done` hears the outcome.
    func resign(to target: String, done: @escaping @Sendable (Result<UInt64, DatabaseError>) -> Void)
    /// A node to hand leadership to, when `failover` names none: the most up-to-date streaming one.
    func bestReplica(excluding node: String) -> String?
}
