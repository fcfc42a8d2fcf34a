import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage

/// What the engine asks of replication, at the named points of its turn. A standalone engine
/// has none (`Engine.replicator` is nil), so its requests and commits never pass through here;
/// a cluster member's is a `ClusterReplicator`, in whatever role the election gives it.
///
/// Every call is on the engine's thread, within its turn.
package protocol Replicator: AnyObject {
    // MARK: The turn

    /// Before the turn's submissions are taken: the replicas' acknowledgements since the last
    /// turn, and the records a replica logs ahead of applying them.
    func turnStarts(_ batches: [[Submission]], now: Int64, batch: inout Batch)
    /// A request of a cluster member: forwarded to the leader, held, or handed back to
    /// `Engine.handle`.
    func route(_ request: Request, operation: Operation, session: SessionLink, now: Int64, batch: inout Batch)
    /// What the cluster node hands the engine (roles, the link's messages, ticks).
    func take(_ input: ClusterInput, now: Int64, batch: inout Batch)
    /// A connection ended, before its onDisconnect queue runs.
    func sessionEnded(_ sessionID: UInt64)
    /// After the turn's last commit: the heartbeat or confirmation that is due.
    func turnEnds(inboxIsEmpty: Bool, now: Int64, batch: inout Batch)
    /// How many records a turn commits at most at once.
    var commitSlice: Int { get }

    // MARK: Commit

    /// True while this node may not acknowledge anything (a leader whose lease is not proven).
    var isFenced: Bool { get }
    /// Whether, under `fsync: always`, appends leave their fsync to the sync thread.
    var leavesFsyncToSyncThread: Bool { get }
    /// Between the log's write of a batch and its fsync: records sent to replicas early.
    func beforeSync(_ records: [EncodedRecord], batch: Batch) -> StreamedEarly?
    /// The batch's records are committed (logged, or kept in memory without a log).
    func committed(_ records: [EncodedRecord], streamed: StreamedEarly?, now: Int64, batch: inout Batch)
    /// The batch was logged but may not be acknowledged: the lease ran out during the append.
    func loggedWhileFenced(streamed: StreamedEarly?, batch: inout Batch)
    /// The log failed while taking the batch.
    func commitFailed(streamed: StreamedEarly?, batch: inout Batch)

    // MARK: Release

    /// Whether a turn's outputs wait for the replicas' confirmation (`syncReplicas ≥ 1`).
    var holdsOutputs: Bool { get }
    /// A failed fsync lost batches that may have been streamed or acknowledged already.
    func logLost(batch: inout Batch)
    /// The log made more of a leader's batches durable: the replicas hear the confirmed revision
    /// in the next records, or in a heartbeat.
    func releasedRevMayHaveRisen()

    // MARK: What the rest of the engine asks

    /// New rules are in force (a leader sends them to its replicas).
    func rulesInstalled(batch: inout Batch)
    /// A leader sends its triggers' cursors to its replicas (`{"<trigger>":{"rev":N,…},…}`), so
    /// that a replica elected leader goes on from them.
    func shareTriggerCursors(_ cursors: JSONValue)
    /// Whether this node runs onDisconnect queues (a replica's leader runs its clients').
    var runsOnDisconnectQueues: Bool { get }
    /// The cluster-wide owner of a connection's onDisconnect registrations (`node/session`).
    func registeringConnection(_ session: UInt64) -> String?
}
