import ExtrasBase64
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// A leader's side of replication: the streams to its replicas, their acknowledgements and
/// heartbeats, and the records it retains for replicas that reconnect.
extension ClusterReplicator {
    func startStream(
        session: SessionLink, node: String, fromRev: UInt64, history json: JSONValue, origin: String?, id: RequestID,
        now: Int64, batch: inout Batch
    ) {
        func respond(_ body: ResponseBody) { batch.append(.response(id, body), for: session) }
        guard case .leader(let epoch) = replication.role else {
            respond(.failure(DatabaseError(.unavailable, "not the leader")))
            return
        }
        guard let theirs = EpochHistory(json: json) else {
            respond(.failure(DatabaseError(.badRequest, "field \"history\" must be [[epoch, firstRev], …] in order")))
            return
        }
        // Records from another origin (a directory that started with its own data) share nothing.
        let sameOrigin = origin != nil && origin == replication.history.origin
        let shared =
            sameOrigin
            ? replication.history.sharedRev(lastRev: engine.database.rev, with: theirs, otherLastRev: fromRev) : 0
        if shared < fromRev {
            let reason =
                sameOrigin
                ? "the replica's log forked from the leader's after rev \(shared)"
                : "the replica's data has another origin than the leader's (it started with data of its own)"
            engine.logger.warning(
                "a replica's log forked from this leader's",
                metadata: [
                    "replica": "\(node)", "replicaRev": "\(fromRev)", "keepRev": "\(shared)", "reason": "\(reason)",
                ])
            let error: JSONValue = .object([
                JSONMember("code", .string(DatabaseError.Code.diverged.rawValue)),
                JSONMember("message", .string(reason)),
                JSONMember("keepRev", .int(Int64(clamping: shared))),
            ])
            respond(.members([JSONMember("ok", .bool(false)), JSONMember("error", error)]))
            return
        }
        var answer: [JSONMember] = [
            JSONMember("ok", .bool(true)), JSONMember("mode", .string("stream")),
            JSONMember("rev", .int(Int64(clamping: engine.database.rev))),
            JSONMember("epoch", .int(Int64(clamping: epoch))),
            JSONMember("history", replication.history.json),
        ]
        if let origin = replication.history.origin { answer.append(JSONMember("origin", .string(origin))) }
        let entries = fromRev == 0 && engine.database.rev > 0 ? nil : retained.entries(after: fromRev)
        if let entries {
            respond(.members(answer))
            let end = WalLineWriter.end(confirmedRev: engine.releasedRev)
            let lines = WalLineWriter.lines(end: end) { line in
                for entry in entries { line(entry.payload, entry.isWrite, entry.rev, entry.epoch) }
            }
            if !lines.isEmpty { batch.append(.line(lines), for: session) }
        } else {
            answer[1] = JSONMember("mode", .string("snapshot"))
            respond(.members(answer))
            let root = engine.database.root
            let rev = engine.database.rev
            let registrations = engine.storage?.onDisconnect ?? OnDisconnectLog()
            let window = engine.writeIDs
            let confirmedRev = engine.releasedRev
            batch.append(
                .computed({
                    Self.snapshotLines(
                        root: root, rev: rev, epoch: epoch, onDisconnect: registrations, writeIDs: window.log(),
                        confirmedRev: confirmedRev)
                }), for: session)
        }
        sendRules(to: [session], batch: &batch)
        var state = engine.sessions[session.id] ?? SessionState(link: session)
        state.isPeer = true
        engine.sessions[session.id] = state
        replication.leader.streams[session.id] = ReplicaStream(
            session: session, node: node, ackedRev: fromRev, ackedAt: now, sentAt: now)
        engine.confirmations.streamStarted(session.id, ackedRev: fromRev)
        engine.logger.info(
            "a replica is streaming",
            metadata: [
                "replica": "\(node)", "fromRev": "\(fromRev)", "mode": "\(entries == nil ? "snapshot" : "stream")",
            ])
        flushWaitingForReplicas(now: now, batch: &batch)
    }

    /// The snapshot at `rev` as `snapshot` lines: the on-disk snapshot file, base64, in chunks;
    /// the last line carries the leader's confirmed revision, as records and heartbeats do (a
    /// replica elected right after installing it would otherwise hold every answer, its
    /// replicas' handshakes included, until a replica confirmed what the old leader had).
    static func snapshotLines(
        root: Node, rev: UInt64, epoch: UInt64, onDisconnect: OnDisconnectLog, writeIDs: WriteIDLog,
        confirmedRev: UInt64
    ) -> [[UInt8]] {
        guard let file = Storage.snapshotFile(root: root, rev: rev, onDisconnect: onDisconnect, writeIDs: writeIDs)
        else { return [] }
        var lines: [[UInt8]] = []
        let chunk = 768 * 1024
        var offset = 0
        while offset < file.count {
            let end = min(file.count, offset + chunk)
            var line = Array(#"{"event":"snapshot","rev":"#.utf8)
            JSONWriter.writeInt(Int64(clamping: rev), into: &line)
            JSONWriter.writeLiteral(#","data":""#, into: &line)
            line += Base64.encodeToBytes(bytes: file[offset..<end])
            JSONWriter.writeLiteral("\"}\n", into: &line)
            lines.append(line)
            offset = end
        }
        var done = Array(#"{"event":"snapshot","rev":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: rev), into: &done)
        JSONWriter.writeLiteral(#","done":true,"confirmedRev":"#, into: &done)
        JSONWriter.writeInt(Int64(clamping: confirmedRev), into: &done)
        done.append(UInt8(ascii: "}"))
        JSONWriter.writeLiteral("\n", into: &done)
        lines.append(done)
        return lines
    }

    /// The leader's rules (when it has any: a leader without rules leaves each replica its own)
    /// to replicas: when a stream starts, and whenever they change.
    func sendRules(to sessions: [SessionLink], batch: inout Batch) {
        guard let rules = engine.rules, !sessions.isEmpty else { return }
        var line: [UInt8] = []
        JSONValue.object([JSONMember("event", .string("rules")), JSONMember("rules", rules.document)])
            .serialize(into: &line)
        line.append(UInt8(ascii: "\n"))
        for session in sessions { batch.append(.line(line), for: session) }
    }

    /// The leader's triggers' cursors to every replica stream, now.
    package func shareTriggerCursors(_ cursors: JSONValue) {
        guard case .leader = replication.role, !replication.leader.streams.isEmpty else { return }
        var line: [UInt8] = []
        JSONValue.object([JSONMember("event", .string("triggers")), JSONMember("cursors", cursors)])
            .serialize(into: &line)
        line.append(UInt8(ascii: "\n"))
        engine.deliver(replication.leader.streams.values.map { ($0.session, [Outbound.line(line)]) })
    }

    /// A replica takes its leader's rules: kept in its data directory (as `setRules` does, so that
    /// a restart loads them) and in force from the next request on.
    func adoptRules(_ document: JSONValue, now: Int64, batch: inout Batch) {
        guard engine.rules?.document != document else { return }
        let ruleSet: RuleSet
        do { ruleSet = try RuleSet(document: document) } catch {
            engine.logger.error(
                "the leader's rules do not compile here; the old rules stay", metadata: ["error": "\(error)"])
            return
        }
        do { try engine.rulesStore.accept(document, now: now) } catch {
            engine.logger.error(
                "could not keep the leader's rules; they are in force until restart",
                metadata: ["file": "\(engine.rulesStore.acceptedPath)", "error": "\(error)"])
        }
        engine.install(ruleSet, now: now, batch: &batch)
        engine.logger.notice("took the leader's rules", metadata: ["file": "\(engine.rulesStore.acceptedPath)"])
    }

    /// Between the log's write and its fsync: a leader under `syncReplicas ≥ 1` sends the records
    /// to its replicas now, so that they flush while it does (docs/cluster.md, "Replication stream"). A stream with
    /// output waiting in this batch (its `replicate` answer, say) gets them after it, with the
    /// batch. Nil when nothing was sent.
    func streamBeforeSync(_ records: [EncodedRecord], batch: Batch) -> StreamedEarly? {
        guard case .leader(let epoch) = replication.role, replication.syncReplicas > 0 else { return nil }
        let ready = replication.leader.streams.values.filter { !batch.hasOutputs(for: $0.session.id) }
        guard !ready.isEmpty else { return nil }
        let lines = streamLines(records, epoch: epoch)
        engine.deliver(ready.map { ($0.session, [Outbound.line(lines)]) })
        return StreamedEarly(lines: lines, sessions: Set(ready.map(\.session.id)))
    }

    /// After the log took a batch (under `fsync: always`, after its fsync): a leader retains its
    /// records and sends them to every stream that did not get them before the fsync, in the
    /// same delivery as its own answers (which under `syncReplicas ≥ 1` wait for the replicas);
    /// a replica acknowledges them.
    func replicationCommitted(
        _ records: [EncodedRecord], streamed: StreamedEarly? = nil, now: Int64, batch: inout Batch
    ) {
        switch replication.role {
        case .standalone:
            return
        case .leader(let epoch):
            // Before the lines are made: they carry it.
            if replication.syncReplicas == 0 { engine.confirmations.reset(confirmedRev: engine.database.rev) }
            retain(records, endingAt: engine.database.rev) { _ in epoch }
            let lines = replication.leader.streams.isEmpty ? [] : streamed?.lines ?? streamLines(records, epoch: epoch)
            for (id, stream) in replication.leader.streams {
                if streamed?.sessions.contains(id) != true { batch.append(.line(lines), for: stream.session) }
                replication.leader.bytesStreamed += UInt64(lines.count)
                replication.leader.streams[id]?.sentAt = now
            }
            replication.leader.recordsStreamed += UInt64(records.count * replication.leader.streams.count)
            replication.leader.confirmationUnsent = false
        case .replica, .candidate:
            // Records of a replica come from its leader; retained so that it can serve streams
            // if it is elected.
            retain(records, endingAt: engine.database.rev) { replication.history.epoch(of: $0) }
            sendAck(engine.database.rev, deferred: engine.defersFsync)
        }
    }

    /// Calls `body` with each record's payload, kind and revision, for a batch whose writes end
    /// at `last` (`database.rev` for a batch just committed): a write's own, an onDisconnect
    /// record's that of the write before it.
    private func forEachRevision(
        of records: [EncodedRecord], endingAt last: UInt64,
        _ body: (_ payload: ArraySlice<UInt8>, _ isWrite: Bool, _ rev: UInt64) -> Void
    ) {
        var rev = last - UInt64(records.count { $0.isWrite })
        for index in records.indices {
            let isWrite = records[index].isWrite
            if isWrite { rev += 1 }
            body(records[index].payload, isWrite, rev)
        }
    }

    /// The `wal` lines of a batch a leader writes in `epoch`, in one buffer: the same for every
    /// stream.
    private func streamLines(_ records: [EncodedRecord], epoch: UInt64) -> [UInt8] {
        let confirmed = engine.releasedRev
        replication.leader.announcedConfirmedRev = max(replication.leader.announcedConfirmedRev, confirmed)
        return WalLineWriter.lines(end: WalLineWriter.end(confirmedRev: confirmed)) { line in
            forEachRevision(of: records, endingAt: engine.database.rev) { payload, isWrite, rev in
                line(payload, isWrite, rev, epoch)
            }
        }
    }

    func retain(_ records: [EncodedRecord], endingAt last: UInt64, epoch: (UInt64) -> UInt64) {
        forEachRevision(of: records, endingAt: last) { payload, isWrite, rev in
            retained.append(RetainedLog.Entry(rev: rev, epoch: epoch(rev), isWrite: isWrite, payload: payload))
        }
    }

    /// Ends every stream (its replica reconnects and compares histories): records were sent
    /// before a fsync that then did not count.
    func endStreams(batch: inout Batch) {
        for stream in replication.leader.streams.values { batch.append(.close, for: stream.session) }
        replication.leader.streams = [:]
        engine.confirmations.endStreams()
    }

    /// Replica: tells the leader that everything up to `rev` is in this node's log; after an
    /// append that deferred its fsync, once the fsync is done (`DeferredAcks`).
    func sendAck(_ rev: UInt64, deferred: Bool) {
        guard let link = replication.replica.link else { return }
        if deferred {
            deferredAcks.send(rev, on: link)
        } else {
            link.send(DeferredAcks.line(rev))
        }
    }

    /// At the start of a turn: the acknowledgements the gate recorded since the last turn.
    func takeAcknowledgements(now: Int64, batch: inout Batch) {
        // Cleared before the gate is read: one recorded after the read sets it again.
        guard engine.acknowledgementsUnseen.exchange(false, ordering: .acquiringAndReleasing) else { return }
        for (session, rev) in engine.confirmations.streamAcknowledgements {
            guard let stream = replication.leader.streams[session], rev > stream.ackedRev else { continue }
            replicaAcked(session: session, rev: rev, now: now, batch: &batch)
        }
    }

    /// The connection that read the acknowledgement already released what it confirms
    /// (`ConfirmationGate.acknowledged`); the engine keeps the stream's position, and tells the
    /// replicas the new confirmed revision.
    private func replicaAcked(session: UInt64, rev: UInt64, now: Int64, batch: inout Batch) {
        guard var stream = replication.leader.streams[session] else { return }
        stream.ackedRev = max(stream.ackedRev, rev)
        stream.ackedAt = now
        replication.leader.streams[session] = stream
        if replication.leader.switchover != nil { checkSwitchover(now: now, batch: &batch) }
        guard replication.syncReplicas > 0, replication.role.isLeader else { return }
        if engine.releasedRev > replication.leader.announcedConfirmedRev {
            replication.leader.confirmationUnsent = true
        }
    }

    /// The log made more of a leader's batches durable (Engine+Durability): a confirmation the
    /// replicas have not heard goes in the next records, or a heartbeat.
    package func releasedRevMayHaveRisen() {
        guard replication.role.isLeader, engine.releasedRev > replication.leader.announcedConfirmedRev else { return }
        replication.leader.confirmationUnsent = true
        confirmSoon(inboxIsEmpty: !engine.hasQueuedWork)
    }

    /// At the end of a leader's turn, after its last commit: the heartbeat a `.confirm` asked
    /// for, unless the turn's records carried the confirmation.
    func sendDueHeartbeat(now: Int64, batch: inout Batch) {
        replication.leader.heartbeatDue = false
        if replication.leader.confirmationUnsent { sendHeartbeats(now: now, batch: &batch) }
    }

    /// How long a leader's advanced `confirmedRev` waits for records to carry it before a
    /// heartbeat does. Under load the next batch's records nearly always come first, saving a line
    /// and a replica engine turn per acknowledgement; idle, a replica's subscribers (and the
    /// answers of writes it forwarded) wait this much longer.
    static let confirmationDelay = TimeAmount.milliseconds(1)

    /// At the end of a leader's turn: a confirmation no records carried goes in a heartbeat after
    /// `confirmationDelay`, unless records carry it first. Nothing is scheduled while more work
    /// is already queued (its records, if any, will carry it, or its turn schedules it).
    func confirmSoon(inboxIsEmpty: Bool) {
        guard replication.leader.confirmationUnsent, inboxIsEmpty, !replication.leader.confirmationScheduled else {
            return
        }
        replication.leader.confirmationScheduled = true
        let engine = self.engine
        engine.loop.scheduleTask(in: Self.confirmationDelay) { engine.submit(.cluster(.confirm)) }
    }

    func sendHeartbeats(now: Int64, batch: inout Batch) {
        var line = Array(#"{"event":"heartbeat","rev":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: engine.database.rev), into: &line)
        JSONWriter.writeLiteral(#","confirmedRev":"#, into: &line)
        let confirmed = engine.releasedRev
        JSONWriter.writeInt(Int64(clamping: confirmed), into: &line)
        replication.leader.announcedConfirmedRev = max(replication.leader.announcedConfirmedRev, confirmed)
        JSONWriter.writeLiteral("}\n", into: &line)
        for (id, stream) in replication.leader.streams {
            batch.append(.line(line), for: stream.session)
            replication.leader.streams[id]?.sentAt = now
        }
        replication.leader.confirmationUnsent = false
    }

    /// A peer session ended: its stream, if it had one, goes.
    func forgetStream(_ session: UInt64) {
        engine.confirmations.streamEnded(session)
        if let stream = replication.leader.streams.removeValue(forKey: session) {
            engine.logger.info("a replica stopped streaming", metadata: ["replica": "\(stream.node)"])
        }
    }
}
