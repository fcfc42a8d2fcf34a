import ExtrasBase64
import HearthCluster
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// A replica's side of replication: what its link to the leader brings (records, snapshots,
/// rules, a divergence) and how the replica logs and applies it.
extension ClusterReplicator {
    func handleLink(
        _ link: any LeaderLink, _ message: LinkMessage, advanced: inout UInt64, now: Int64, batch: inout Batch
    ) {
        replication.replica.lastHeard = now
        switch message {
        case .started(let mode, let rev, _, let history, let origin):
            // The records this node keeps agree with the leader's up to here, so the leader's
            // history (and origin) describes them, and the epoch it now writes in.
            if var leaderHistory = EpochHistory(json: history) {
                leaderHistory.origin = origin ?? replication.history.origin
                adoptHistory(leaderHistory)
            }
            if mode == "snapshot" { replication.replica.incomingSnapshot = (rev, []) }
            replication.replica.linkStarted = true
            replication.replica.announcedRestart = true
            replication.replica.catchUpTo = rev
            for owner in replication.replica.pendingDisconnects { link.send(Self.disconnectedLine(owner)) }
            replication.replica.pendingDisconnects = []
            engine.logger.info(
                "replicating from the leader",
                metadata: [
                    "leader": "\(link.leader)", "mode": "\(mode)", "fromRev": "\(engine.database.rev)",
                    "leaderRev": "\(rev)",
                ])
            publishPosition(state: mode == "snapshot" || rev > engine.database.rev ? .catchingUp : .streaming)
        case .diverged(let keepRev):
            moveDivergentRecords(after: keepRev)
            replication.replica.forceSnapshot = true
            link.close()
        case .refused(let reason):
            engine.logger.error(
                "the leader refused replication", metadata: ["leader": "\(link.leader)", "reason": "\(reason)"])
            link.close()
        case .records(let run):
            for index in 0..<run.count {
                guard link.id == replication.replica.link?.id else { return }  // as for each message
                handleRecord(index, of: run, link: link, advanced: &advanced, now: now, batch: &batch)
            }
        case .snapshotChunk(let rev, let data, let done, let confirmedRev):
            guard var incoming = replication.replica.incomingSnapshot, incoming.rev == rev else { return }
            if let data, let bytes = try? Base64.decode(string: data) { incoming.bytes += bytes }
            replication.replica.incomingSnapshot = incoming
            if done {
                replication.replica.incomingSnapshot = nil
                installSnapshot(incoming.bytes, rev: rev, now: now, batch: &batch)
                if engine.database.rev == rev { engine.confirmations.advance(to: confirmedRev, now: engine.clock()) }
                noteCaughtUp()
            }
        case .heartbeat(let confirmedRev):
            engine.confirmations.advance(to: confirmedRev, now: engine.clock())
            if replication.role != .standalone, engine.database.rev >= confirmedRev {
                publishPosition(state: .streaming)
            }
        case .rules(let document):
            adoptRules(document, now: now, batch: &batch)
        case .triggerCursors(let cursors):
            engine.triggerCursorsListener.withLockedValue { $0 }?(cursors)
        case .forwardAnswer(let forward, let members):
            forwardAnswered(forward, members: members, now: now, batch: &batch)
        case .goaway:
            link.close()
        case .closed:
            replication.replica.linkStarted = false
            replication.replica.link = nil
            replication.replica.incomingSnapshot = nil
            linkLost(now: now, batch: &batch)
        }
    }

    /// Applies (or, for an onDisconnect change, records) one of the leader's records.
    private func handleRecord(
        _ index: Int, of run: LinkRecords, link: any LeaderLink, advanced: inout UInt64, now: Int64, batch: inout Batch
    ) {
        let record = run.records[index]
        let loggedAhead = replication.replica.recordsLoggedAhead > 0
        if loggedAhead { replication.replica.recordsLoggedAhead -= 1 }
        if record.isWrite, let write = run.writes[index] {
            guard record.rev == engine.database.rev + 1 else {
                if record.rev > engine.database.rev + 1 {
                    engine.logger.error(
                        "a gap in the replication stream; reconnecting",
                        metadata: ["expected": "\(engine.database.rev + 1)", "got": "\(record.rev)"])
                    link.close()
                }
                return
            }
            applyReplicated(write, payload: run.payload(at: index), loggedAhead: loggedAhead, now: now, batch: &batch)
        } else if !record.isWrite, !loggedAhead {
            guard let decoded = try? ReplicatedRecord.decodeChange(Array(run.payload(at: index))) else { return }
            batch.record(decoded)
        }
        if loggedAhead, replication.replica.recordsLoggedAhead == 0 {
            // Every record logged ahead is applied: nothing of this turn is left to log, nor to
            // undo unless their fsync (deferred) fails.
            engine.committed(&batch, durableLater: engine.defersFsync)
        }
        if record.confirmedRev > advanced {
            engine.confirmations.advance(to: record.confirmedRev, now: engine.clock())
            advanced = record.confirmedRev
        }
        noteCaughtUp()
    }

    /// Applies a write the leader committed, exactly as the leader did: same revision, same log
    /// record, same events. A write `logAhead` already put in the log is not recorded again.
    private func applyReplicated(
        _ committed: CommittedWrite, payload: ArraySlice<UInt8>, loggedAhead: Bool, now: Int64, batch: inout Batch
    ) {
        if loggedAhead, let tag = committed.tag {
            engine.writeIDs.remember(tag, rev: committed.rev, pushKey: committed.pushKey)
        }
        replay(committed, recordingWith: loggedAhead ? nil : payload, now: now, batch: &batch)
        releaseAnsweredForwards(batch: &batch)
    }

    /// Replica, at the start of a turn: logs the leader's records that open it (the `.link`
    /// submissions at its front, up to the first message that is not a record following on), with
    /// one write and per its fsync policy one fsync, and acknowledges them before applying any.
    /// `replicaAck` says that the records are durable here, not that they are applied
    /// (docs/cluster.md, "Replication stream"), so the leader hears while this node applies them rather than after:
    /// under `syncReplicas ≥ 1` its clients wait that much less. The turn then applies them without
    /// logging them again (`ReplicationState.recordsLoggedAhead` counts them down). Nothing else
    /// comes between: the records are the turn's first submissions, and a replica applies nothing
    /// else. When the log fails, nothing is logged ahead, and the records go the way of any batch
    /// the log refuses.
    func logAhead(_ batches: [[Submission]]) {
        assert(replication.replica.recordsLoggedAhead == 0, "records logged ahead in an earlier turn were not applied")
        guard case .replica = replication.role, let storage = engine.storage, engine.storageFailure == nil,
            replication.replica.incomingSnapshot == nil, let current = replication.replica.link?.id
        else { return }
        var records: [EncodedRecord] = []
        var rev = engine.database.rev
        scan: for item in batches.joined() {
            guard case .cluster(.link(let link, let messages)) = item, link.id == current else { break }
            for message in messages {
                guard case .records(let run) = message else { break scan }
                for index in 0..<run.count {
                    let record = run.records[index]
                    if record.isValidWrite, record.rev == rev + 1 {
                        rev = record.rev
                        records.append(EncodedRecord(writeRev: record.rev, payload: run.payload(at: index)))
                    } else if !record.isWrite {
                        let payload = run.payload(at: index)
                        guard let change = try? ReplicatedRecord.decodeChange(Array(payload)) else { break scan }
                        records.append(EncodedRecord(.onDisconnect(change), payload: payload))
                    } else {
                        break scan
                    }
                }
            }
        }
        guard !records.isEmpty else { return }
        let deferring = engine.defersFsync
        do { try storage.append(records, deferringSync: deferring) {} } catch {
            engine.storageFailed(error)
            return
        }
        replication.replica.recordsLoggedAhead = records.count
        retain(records, endingAt: rev) { replication.history.epoch(of: $0) }
        sendAck(rev, deferred: deferring)
    }

    /// Replays a committed write (in place when nothing needs the old tree), records it in the
    /// batch with its payload when one is given (and remembers its write id), then brings the
    /// change log and the views up to date.
    func replay(
        _ committed: CommittedWrite, recordingWith payload: ArraySlice<UInt8>?, now: Int64, batch: inout Batch
    ) {
        var kept: [(path: Path, before: Node)]?
        var write: Write?
        var before: Node?
        if let (path, node) = committed.nonEmptySet, !engine.views.watches(CollectionOfOne(path)) {
            // In place, its undo point found on the way down (as `applyInPlace` does).
            kept = [engine.database.replay(settingNonEmpty: node, at: path, rev: committed.rev)]
        } else {
            write = Write.overwrites(committed.overwrites.map { ($0.path, PreparedValue(node: $0.node)) })
            before = engine.database.root
            engine.database.replay(committed)
        }
        if let payload {
            if let tag = committed.tag { engine.writeIDs.remember(tag, rev: committed.rev, pushKey: committed.pushKey) }
            batch.record(committed, payload: payload)
        }
        if let kept {
            engine.afterWrite(rev: committed.rev, kept: kept, now: now, batch: &batch)
        } else if let write, let before {
            engine.afterWrite(write, before: before, rev: committed.rev, now: now, batch: &batch)
        }
    }

    /// A replica that has every record the leader had when the stream started is streaming.
    private func noteCaughtUp() {
        if replication.memberState != .streaming, replication.replica.incomingSnapshot == nil,
            engine.database.rev >= replication.replica.catchUpTo
        {
            publishPosition(state: .streaming)
        }
    }

    /// Replaces the whole state with the leader's snapshot at `rev`.
    private func installSnapshot(_ file: [UInt8], rev: UInt64, now: Int64, batch: inout Batch) {
        if batch.hasUncommittedRecords { engine.commit(&batch) }
        engine.waitUntilDurable()
        do {
            let contents = try Storage.decodeSnapshotFile(file, rev: rev)
            try engine.storage?.install(snapshot: file, rev: rev, onDisconnect: contents.onDisconnect)
            engine.undurable.removeAll()
            engine.confirmations.resetDurable(to: rev)
            deferredAcks.reset(durableRev: rev)
            let before = engine.database.root
            engine.confirmations.drop(
                above: rev,
                DatabaseError(.unavailable, "the records this answer showed were replaced by the leader's; try again"))
            engine.database = Database(root: contents.root, rev: rev, limits: engine.database.limits)
            batch.undo.reset(rev: engine.database.rev)
            engine.writeIDs = WriteIDWindow(
                recovered: contents.writeIDs, capacity: engine.writeIDs.capacity,
                retentionSeconds: Int(engine.writeIDs.retention / 1000),
                now: now)
            engine.changeLog = ChangeLog(capacity: engine.changeLog.capacity)
            retained.reset(at: rev)
            engine.nextRegistrationID = max(engine.nextRegistrationID, contents.onDisconnect.nextID)
            engine.views.apply(
                write: nil, paths: [.root], before: before, after: engine.database.root, rev: rev, batch: &batch)
            try engine.storage?.saveHistory(replication.history)
            engine.logger.info(
                "installed the leader's snapshot", metadata: ["rev": "\(rev)", "bytes": "\(file.count)"])
            sendAck(rev, deferred: false)
        } catch {
            engine.logger.error("could not install the leader's snapshot", metadata: ["error": "\(error)"])
            replication.replica.link?.close()
        }
    }

    /// Takes the leader's history as this node's (the records up to the shared revision agree).
    func adoptHistory(_ history: EpochHistory) {
        guard history != replication.history else { return }
        replication.history = history
        do { try engine.storage?.saveHistory(history) } catch {
            engine.logger.error("could not save the epoch history", metadata: ["error": "\(error)"])
        }
    }

    /// Moves the records this node wrote after `keepRev` in epochs the cluster abandoned into
    /// `divergent-<epoch>-<firstRev>.json` files (docs/cluster.md, "A node that comes back"); the snapshot that follows
    /// replaces the data.
    private func moveDivergentRecords(after keepRev: UInt64) {
        guard let storage = engine.storage else { return }
        let found: (writes: [CommittedWrite], complete: Bool)
        do { found = try storage.writes(after: keepRev) } catch {
            engine.logger.error("could not read the divergent records", metadata: ["error": "\(error)"])
            return
        }
        var byEpoch: [(epoch: UInt64, writes: [CommittedWrite])] = []
        for write in found.writes {
            let epoch = replication.history.epoch(of: write.rev)
            if byEpoch.last?.epoch == epoch {
                byEpoch[byEpoch.count - 1].writes.append(write)
            } else {
                byEpoch.append((epoch, [write]))
            }
        }
        for (epoch, writes) in byEpoch {
            guard let first = writes.first, let last = writes.last else { continue }
            let file = DivergentRecords.encode(epoch: epoch, writes: writes, complete: found.complete)
            let name = "divergent-\(epoch)-\(first.rev).json"
            do { try storage.writeFile(name, file) } catch {
                engine.logger.error(
                    "could not write the divergent records", metadata: ["file": "\(name)", "error": "\(error)"])
                continue
            }
            engine.logger.warning(
                "moved records of an abandoned epoch aside: they are not in the data; inspect and re-apply them if needed",
                metadata: [
                    "file": "\(storage.directory)/\(name)", "records": "\(writes.count)", "fromRev": "\(first.rev)",
                    "toRev": "\(last.rev)", "complete": "\(found.complete)",
                ])
        }
        if !found.complete, engine.database.rev > keepRev {
            // Some records were folded into a snapshot: the whole data as this node has it goes
            // aside too, so that nothing the snapshot from the leader replaces is lost.
            let name = "divergent-data-\(engine.database.rev).json"
            var members = [
                JSONMember("rev", .int(Int64(clamping: engine.database.rev))),
                JSONMember("afterRev", .int(Int64(clamping: keepRev))),
            ]
            if let origin = replication.history.origin { members.append(JSONMember("origin", .string(origin))) }
            members.append(JSONMember("data", engine.database.root.jsonValue(format: .export)))
            do { try storage.writeFile(name, JSONValue.object(members).serialized) } catch {
                engine.logger.error(
                    "could not write the divergent data", metadata: ["file": "\(name)", "error": "\(error)"])
                return
            }
            engine.logger.warning(
                "records of an abandoned epoch were folded into a snapshot: moved this node's whole data aside; it is not in the data",
                metadata: [
                    "file": "\(storage.directory)/\(name)", "afterRev": "\(keepRev)", "rev": "\(engine.database.rev)",
                ])
        }
    }
}
