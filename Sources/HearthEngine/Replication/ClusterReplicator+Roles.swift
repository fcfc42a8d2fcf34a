import ExtrasBase64
import HearthCluster
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// Role changes decided by the election, fencing, the link's (re)connection, the periodic tick
/// and what this node publishes of its position.
extension ClusterReplicator {
    func changeRole(_ role: EngineRole, now: Int64, batch: inout Batch) {
        let previous = replication.role
        guard role != previous else { return }
        if batch.hasUncommittedRecords { engine.commit(&batch) }
        replication.role = role
        replication.leader.turnLeadershipProof = nil
        engine.setLeads(role.isLeader)
        replication.leader.fencedUntilRoleChange = false
        switch role {
        case .leader(let epoch):
            replication.replica.link?.close()
            replication.replica.link = nil
            reconcileWithLog(now: now, batch: &batch)
            var history = replication.history
            history.begin(epoch: epoch, firstRev: engine.database.rev + 1)
            adoptHistory(history)
            if let storage = engine.storage {
                engine.nextRegistrationID = max(engine.nextRegistrationID, storage.onDisconnect.nextID)
            }
            if replication.syncReplicas == 0 { engine.confirmations.reset(confirmedRev: engine.database.rev) }
            retakeForwards(now: now, batch: &batch)
            runOrphanedQueues(now: now, batch: &batch)
        case .replica(let leader, _):
            stepDown(from: previous, batch: &batch)
            if let leader, replication.replica.link?.leader != leader {
                dropLink(now: now, batch: &batch)
                connectLink(to: leader)
            } else if leader == nil {
                dropLink(now: now, batch: &batch)
            }
        case .candidate:
            stepDown(from: previous, batch: &batch)
            dropLink(now: now, batch: &batch)
        case .standalone:
            break
        }
        engine.logger.info(
            "cluster role changed",
            metadata: ["from": "\(previous.name)", "to": "\(role.name)", "epoch": "\(role.epoch)"])
        publishPosition(
            state: role.isLeader ? .leader : role == .candidate(epoch: role.epoch) ? .candidate : .catchingUp)
        broadcastClusterEvent(batch: &batch)
    }

    /// A leader that stops leading: its streams end, waiting writes fail, and held answers become
    /// `unavailable` (their writes may or may not survive: the new leader decides).
    private func stepDown(from previous: EngineRole, batch: inout Batch) {
        guard previous.isLeader else { return }
        for stream in replication.leader.streams.values {
            batch.append(.close, for: stream.session)
        }
        replication.leader.streams = [:]
        engine.confirmations.endStreams()
        for waiting in replication.leader.waitingForReplicas {
            batch.append(
                .response(waiting.request.id, .failure(DatabaseError(.unavailable, "not the leader"))),
                for: waiting.session)
        }
        replication.leader.waitingForReplicas = []
        engine.confirmations.failAll(
            DatabaseError(
                .unavailable, "outcome unknown: the leader stepped down before the write was confirmed"))
    }

    /// A leader that cannot prove its lease (docs/cluster.md, "Election and fencing").
    package var isFenced: Bool {
        guard replication.role.isLeader, let hooks = clusterHooks else { return false }
        return replication.leader.fencedUntilRoleChange || !hooks.hasLeadershipProof()
    }

    /// The log may hold records the in-memory state dropped (a batch refused after the proof of
    /// leadership ran out): they are replayed, so that log and state agree before leading.
    private func reconcileWithLog(now: Int64, batch: inout Batch) {
        guard let storage = engine.storage, storage.lastRev > engine.database.rev else { return }
        guard let found = try? storage.writes(after: engine.database.rev), found.complete else {
            engine.logger.error(
                "the log is ahead of the state and cannot be replayed", metadata: ["rev": "\(engine.database.rev)"])
            return
        }
        for write in found.writes { replay(write, recordingWith: nil, now: now, batch: &batch) }
        batch.undo.reset(rev: engine.database.rev)
    }

    /// Closes the link to a leader this node no longer follows. Its later `.closed` is ignored (an
    /// earlier link's), so what was in flight on it is settled here: sent again on the next link,
    /// or answered "outcome unknown".
    private func dropLink(now: Int64, batch: inout Batch) {
        guard let link = replication.replica.link else { return }
        link.close()
        replication.replica.link = nil
        replication.replica.linkStarted = false
        replication.replica.incomingSnapshot = nil
        linkLost(now: now, batch: &batch)
    }

    func connectLink(to leader: String) {
        guard let hooks = clusterHooks else { return }
        replication.replica.nextLinkID += 1
        // The log's position: a batch fenced after its append is in the log, not in memory, and
        // the leader's answer (diverged) moves it aside.
        let fromRev = replication.replica.forceSnapshot ? 0 : max(engine.database.rev, engine.storage?.lastRev ?? 0)
        let history = replication.replica.forceSnapshot ? EpochHistory() : replication.history
        replication.replica.forceSnapshot = false
        // The first link of this run tells the leader that the connections of any earlier run of
        // this node are gone (their onDisconnect queues run), before anything this run sends.
        let first = replication.replica.announcedRestart ? [] : [Self.disconnectedLine("\(replication.node)/*")]
        replication.replica.link = hooks.openLink(
            id: replication.replica.nextLinkID, leader: leader, fromRev: fromRev, history: history, firstLines: first)
        replication.replica.linkOpenedAt = engine.clock()
    }

    func clusterTick(now: Int64, batch: inout Batch) {
        publishPosition(state: replication.memberState)
        if engine.confirmations.isHolding {
            // Their writes stay held, and the events they raised are delivered if and when a
            // replica confirms them.
            engine.confirmations.expire(
                now: now, timeoutMs: replication.syncTimeoutMs,
                DatabaseError(
                    .unavailable,
                    "not enough replicas confirmed within \(replication.syncTimeoutMs) ms (outcome unknown: a held write is applied if a replica confirms it later)"
                ))
        }
        replication.metrics?.update(
            role: replication.role, confirmedRev: engine.releasedRev,
            lags: replication.leader.streams.values.map { stream in
                ClusterMetrics.Lag(
                    node: stream.node, revs: engine.database.rev - min(engine.database.rev, stream.ackedRev),
                    ms: stream.ackedRev >= engine.database.rev ? 0 : now - stream.ackedAt)
            }, recordsStreamed: replication.leader.recordsStreamed, bytesStreamed: replication.leader.bytesStreamed,
            syncWaitMs: replication.leader.syncWaitMs + engine.confirmations.waitedMs,
            streaming: replication.replica.linkStarted)
        switch replication.role {
        case .leader:
            if replication.leader.streams.values.contains(where: { now - $0.sentAt >= 1000 }) {
                sendHeartbeats(now: now, batch: &batch)
            }
            expireWaitingForReplicas(now: now, batch: &batch)
            checkSwitchover(now: now, batch: &batch)
        case .replica(let leader?, _):
            if replication.replica.link == nil, now - replication.replica.linkOpenedAt >= 500 {
                connectLink(to: leader)
            } else if replication.replica.link != nil, now - replication.replica.lastHeard > 5000,
                now - replication.replica.linkOpenedAt > 5000
            {
                engine.logger.warning(
                    "nothing from the leader for 5 s; reconnecting", metadata: ["leader": "\(leader)"])
                replication.replica.link?.close()
            }
            expireForwards(now: now, batch: &batch)
        default:
            expireForwards(now: now, batch: &batch)
        }
    }

    package func publishPosition(state: MemberState) {
        replication.memberState = state
        // The tick calls this every 100 ms: only a change is published.
        let position = PublishedPosition(
            role: replication.role, rev: engine.database.rev, state: state, confirmedRev: engine.releasedRev)
        guard position != replication.published else { return }
        replication.published = position
        if let hooks = clusterHooks {
            engine.publishClusterObject(hooks.clusterObject(role: replication.role, rev: engine.database.rev))
        }
        clusterHooks?.positionChanged(
            role: replication.role, rev: engine.database.rev,
            lastEpoch: replication.history.epoch(of: engine.database.rev),
            confirmedRev: engine.releasedRev, state: state)
    }

    /// Every client connection of the node hears the change (`cluster` event).
    private func broadcastClusterEvent(batch: inout Batch) {
        guard let hooks = clusterHooks else { return }
        hooks.broadcast(
            ResponseEncoder.clusterEvent(hooks.clusterObject(role: replication.role, rev: engine.database.rev)))
    }
}
