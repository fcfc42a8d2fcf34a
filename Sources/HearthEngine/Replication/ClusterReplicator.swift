import HearthCore
import HearthProtocol
import HearthStorage
import Logging

/// A cluster member's replication (docs/cluster.md): as leader, streams every committed record
/// to its replicas, waits for them under `syncReplicas` and answers their forwarded requests; as
/// replica, logs and applies its leader's records and forwards the writes it is sent; as
/// candidate, holds writes until the election decides. The role changes in place (a replica
/// becomes leader on failover), so one object owns the state of both sides: the streams, the
/// retained log, the link to the leader, forwarded requests and deferred acknowledgements.
///
/// Confined to the engine's thread, like the engine it serves; it reaches the engine's state
/// through `engine`, which owns it.
package final class ClusterReplicator: Replicator {
    unowned(unsafe) let engine: Engine
    /// The cluster node this engine belongs to; nil while a configured cluster has none yet.
    let clusterHooks: (any ClusterHooks)?
    /// Roles, streams, the link, forwarded and held requests (`ReplicationState`).
    @exclusivity(unchecked) var replication = ReplicationState()
    /// The recent records a leader streams to replicas that reconnect (each record is appended
    /// on its own: one access each).
    @exclusivity(unchecked) var retained: RetainedLog
    /// A replica's acknowledgements waiting for a deferred fsync (any thread).
    let deferredAcks = DeferredAcks()

    /// Joins `engine` as `node`, a candidate until the election decides. Engine thread, before
    /// the engine takes a member's requests.
    package init(
        engine: Engine, hooks: (any ClusterHooks)?, node: String, syncReplicas: Int, syncTimeoutMs: Int,
        changeLogRevisions: Int
    ) {
        self.engine = engine
        self.clusterHooks = hooks
        retained = RetainedLog(capacity: changeLogRevisions)
        retained.reset(at: engine.database.rev)
        replication.node = node
        replication.syncReplicas = syncReplicas
        replication.syncTimeoutMs = Int64(syncTimeoutMs)
        replication.role = .candidate(epoch: 0)
    }

    // MARK: Replicator

    package func turnStarts(_ batches: [[Submission]], now: Int64, batch: inout Batch) {
        replication.leader.turnLeadershipProof = nil
        takeAcknowledgements(now: now, batch: &batch)
        logAhead(batches)
    }

    package func take(_ input: ClusterInput, now: Int64, batch: inout Batch) {
        handleCluster(input, now: now, batch: &batch)
    }

    package func sessionEnded(_ sessionID: UInt64) { clusterSessionEnded(sessionID) }

    package func turnEnds(inboxIsEmpty: Bool, now: Int64, batch: inout Batch) {
        if replication.leader.heartbeatDue { sendDueHeartbeat(now: now, batch: &batch) }
        if replication.leader.confirmationUnsent { confirmSoon(inboxIsEmpty: inboxIsEmpty) }
    }

    /// A leader under `syncReplicas ≥ 1` that defers its fsyncs streams a long turn's records in
    /// slices of `streamSliceRecords`, so that its replicas log and fsync the first ones while it
    /// applies the rest. Unlimited elsewhere.
    package var commitSlice: Int {
        guard case .leader = replication.role, replication.syncReplicas > 0, engine.defersFsync else { return .max }
        return Self.streamSliceRecords
    }

    /// Records per slice of a replication stream: large enough that a slice's fsync is shared by
    /// many writes, small enough that replicas start on a long turn's records early.
    static let streamSliceRecords = 256

    /// A leader under `syncReplicas ≥ 1` defers (its replicas show nothing before its
    /// `confirmedRev`, which then waits for its own fsync too), and so does a replica (whose
    /// acknowledgements the sync thread sends, `DeferredAcks`). A leader under `syncReplicas: 0`
    /// streams a batch only once its fsync is done, and a candidate logs nothing new: both wait
    /// for it.
    package var leavesFsyncToSyncThread: Bool {
        switch replication.role {
        case .standalone, .replica: return true
        case .leader: return replication.syncReplicas > 0
        case .candidate: return false
        }
    }

    package func beforeSync(_ records: [EncodedRecord], batch: Batch) -> StreamedEarly? {
        streamBeforeSync(records, batch: batch)
    }

    package func committed(_ records: [EncodedRecord], streamed: StreamedEarly?, now: Int64, batch: inout Batch) {
        replicationCommitted(records, streamed: streamed, now: now, batch: &batch)
    }

    package func loggedWhileFenced(streamed: StreamedEarly?, batch: inout Batch) {
        replication.leader.fencedUntilRoleChange = true  // the log is now ahead of memory
        if streamed != nil { endStreams(batch: &batch) }
    }

    package func commitFailed(streamed: StreamedEarly?, batch: inout Batch) {
        if streamed != nil { endStreams(batch: &batch) }
    }

    package var holdsOutputs: Bool { replication.holdsOutputs }

    package func logLost(batch: inout Batch) {
        deferredAcks.dropWaiting()
        retained.reset(at: engine.database.rev)
        // The replicas were sent records this log lost: they reconnect and compare histories.
        if replication.role.isLeader { endStreams(batch: &batch) }
    }

    package func rulesInstalled(batch: inout Batch) {
        if replication.role.isLeader { sendRules(to: replication.leader.streams.values.map(\.session), batch: &batch) }
    }

    package var runsOnDisconnectQueues: Bool { replication.role.appliesWrites }

    /// Closes the link to the leader (shutdown).
    package func closeLink() { replication.replica.link?.close() }
}

/// A leader's records sent to its replicas before its own fsync: their lines (one buffer),
/// and the streams that got them.
package struct StreamedEarly {
    let lines: [UInt8]
    let sessions: Set<UInt64>
}
