import ExtrasBase64
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// `syncReplicas`: a leader's writes that wait, unapplied, until enough replicas stream.
extension ClusterReplicator {
    /// Under `syncReplicas: N`, a write that arrives while fewer than N replicas stream waits
    /// (unapplied) for them, up to `syncTimeoutMs`.
    func needsReplicasFirst(_ request: Request, session: SessionLink, now: Int64) -> Bool {
        guard replication.syncReplicas > 0, replication.role.isLeader,
            replication.leader.streams.count < replication.syncReplicas
                || !replication.leader.waitingForReplicas.isEmpty
        else { return false }
        replication.leader.waitingForReplicas.append((session, request, now))
        return true
    }

    func flushWaitingForReplicas(now: Int64, batch: inout Batch) {
        guard replication.leader.streams.count >= replication.syncReplicas,
            !replication.leader.waitingForReplicas.isEmpty
        else {
            return
        }
        let waiting = replication.leader.waitingForReplicas
        replication.leader.waitingForReplicas = []
        for entry in waiting {
            replication.leader.syncWaitMs += max(0, now - entry.since)
            decrementInFlight(entry.session)
            route(entry.request, session: entry.session, now: now, batch: &batch)
            runDeferredIfIdle(entry.session, batch: &batch)
        }
    }

    func expireWaitingForReplicas(now: Int64, batch: inout Batch) {
        flushWaitingForReplicas(now: now, batch: &batch)
        while let first = replication.leader.waitingForReplicas.first, now - first.since >= replication.syncTimeoutMs {
            replication.leader.waitingForReplicas.removeFirst()
            let error = DatabaseError(
                .unavailable,
                "not enough replicas: \(replication.leader.streams.count) of the \(replication.syncReplicas) required are streaming; the write was not applied"
            )
            batch.append(.response(first.request.id, .failure(error)), for: first.session)
            finishedInFlight(first.session, batch: &batch)
        }
    }
}
