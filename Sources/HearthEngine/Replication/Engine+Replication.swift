import ExtrasBase64
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// What the cluster node hands the engine (`Submission.cluster`).
package enum ClusterInput: Sendable {
    /// The coordinator decided this node's role.
    case role(EngineRole)
    /// Messages of the peer connection to the leader, in order (a read's worth: one submission
    /// for a burst of records, not one each).
    case link(any LeaderLink, [LinkMessage])
    /// Timeouts and heartbeats (every 100 ms).
    case tick
    /// An answer decided off the engine thread (a switchover's outcome).
    case answer(SessionLink, RequestID, ResponseBody)
    /// Members whose lease expired: a leader runs their clients' onDisconnect queues.
    case membersLost([String])
    /// A leader's confirmation that no records carried within `Engine.confirmationDelay`.
    case confirm
}

/// Replication (docs/cluster.md, "Replication stream"): the leader streams every committed record to
/// its replicas; a replica logs and applies them in its own turns, raising the same events.
extension Engine {
    // MARK: Inputs

    func handleCluster(_ input: ClusterInput, now: Int64, batch: inout Batch) {
        switch input {
        case .role(let role):
            changeRole(role, now: now, batch: &batch)
        case .link(let link, let messages):
            // The confirmed revision the records carry, advanced once per change (most records
            // of a run carry the same one, and advancing takes the gate's lock).
            var advanced: UInt64 = 0
            for message in messages {
                guard link.id == replication.link?.id else { return }  // an earlier link's last words
                handleLink(link, message, advanced: &advanced, now: now, batch: &batch)
            }
        case .tick:
            clusterTick(now: now, batch: &batch)
        case .answer(let session, let id, let body):
            batch.append(.response(id, body), for: session)
        case .confirm:
            replication.confirmationScheduled = false
            replication.heartbeatDue = true
        case .membersLost(let nodes):
            guard replication.role.isLeader else { return }
            for node in nodes {
                logger.warning(
                    "a member left the cluster; running its clients' onDisconnect operations",
                    metadata: ["member": "\(node)"])
                runQueues(ofNode: node, now: now, batch: &batch)
            }
        }
    }

    /// The peer ops (`replicate`, `replicaAck`, `forward`, `disconnected`) and the operator's
    /// (`clusterStatus`, `failover`).
    func handleClusterRequest(
        _ op: ClusterRequest, request: Request, session: SessionLink, now: Int64, batch: inout Batch
    ) {
        func respond(_ body: ResponseBody) { batch.append(.response(request.id, body), for: session) }
        let isPeer = sessions[session.id]?.isPeer == true
        let identity = sessions[session.id]?.identity
        guard clusterHooks != nil || replication.isClustered else {
            respond(.failure(DatabaseError(.badRequest, "this server is not part of a cluster")))
            return
        }
        switch op {
        case .status:
            guard identity?.isAdmin == true || rules == nil || isPeer else {
                respond(.failure(adminOnly("clusterStatus")))
                return
            }
            guard let hooks = clusterHooks else {
                respond(.failure(DatabaseError(.badRequest, "this server is not part of a cluster")))
                return
            }
            var cluster = hooks.clusterObject(role: replication.role, rev: database.rev)
            if hooks.noEligibleLeader, case .object(var members) = cluster {
                members.append(JSONMember("noEligibleLeader", .bool(true)))
                cluster = .object(members)
            }
            respond(
                .members([
                    JSONMember("ok", .bool(true)),
                    JSONMember("cluster", cluster),
                    JSONMember("members", .array(hooks.members().map { withStreamLag($0, now: now) })),
                ]))
        case .failover(let target):
            guard identity?.isAdmin == true || rules == nil || isPeer else {
                respond(.failure(adminOnly("failover")))
                return
            }
            switchover(to: target, request: request, session: session, now: now, batch: &batch)
        case .replicate, .replicaAck, .forward, .disconnected:
            guard isPeer || (clusterHooks != nil && clusterHooks?.secret == nil && rules == nil) else {
                respond(
                    .failure(
                        DatabaseError(
                            .permissionDenied, "\(op.name) is a peer op: authenticate with the cluster secret first")))
                return
            }
            switch op {
            case .replicate(let node, let fromRev, let history, let origin):
                if batch.hasUncommittedRecords { commit(&batch) }
                startStream(
                    session: session, node: node, fromRev: fromRev, history: history, origin: origin, id: request.id,
                    now: now, batch: &batch)
            case .forward(let identity, let stored, let owner, let inner):
                runForwarded(
                    inner, identity: identity, stored: stored, owner: owner, peer: session, id: request.id, now: now,
                    batch: &batch)
            case .disconnected(let owner):
                runRemoteOnDisconnect(owner: owner, now: now, batch: &batch)
                respond(.done)
            default: break
            }
        }
    }

    /// On the leader, a member that streams from it shows its lag as the leader sees it: the
    /// revisions it has not acknowledged (`lagRevs`) and for how long the oldest of them has
    /// waited (`lagMs`).
    private func withStreamLag(_ member: JSONValue, now: Int64) -> JSONValue {
        guard replication.role.isLeader, case .object(var fields) = member,
            let stream = replication.streams.values.first(where: { .string($0.node) == member["node"] })
        else { return member }
        fields.removeAll { $0.key == "lagRevs" || $0.key == "lagMs" }
        let behind = database.rev - min(database.rev, stream.ackedRev)
        fields.append(JSONMember("lagRevs", .int(Int64(clamping: behind))))
        fields.append(JSONMember("lagMs", .int(behind == 0 ? 0 : max(0, now - stream.ackedAt))))
        return .object(fields)
    }

    // MARK: Leader: streams

    private func startStream(
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
            sameOrigin ? replication.history.sharedRev(lastRev: database.rev, with: theirs, otherLastRev: fromRev) : 0
        if shared < fromRev {
            let reason =
                sameOrigin
                ? "the replica's log forked from the leader's after rev \(shared)"
                : "the replica's data has another origin than the leader's (it started with data of its own)"
            logger.warning(
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
            JSONMember("rev", .int(Int64(clamping: database.rev))), JSONMember("epoch", .int(Int64(clamping: epoch))),
            JSONMember("history", replication.history.json),
        ]
        if let origin = replication.history.origin { answer.append(JSONMember("origin", .string(origin))) }
        let entries = fromRev == 0 && database.rev > 0 ? nil : retained.entries(after: fromRev)
        if let entries {
            respond(.members(answer))
            let end = WalLineWriter.end(confirmedRev: releasedRev)
            let lines = WalLineWriter.lines(end: end) { line in
                for entry in entries { line(entry.payload, entry.isWrite, entry.rev, entry.epoch) }
            }
            if !lines.isEmpty { batch.append(.line(lines), for: session) }
        } else {
            answer[1] = JSONMember("mode", .string("snapshot"))
            respond(.members(answer))
            let root = database.root
            let rev = database.rev
            let registrations = storage?.onDisconnect ?? OnDisconnectLog()
            let window = writeIDs
            batch.append(
                .computed({
                    Engine.snapshotLines(
                        root: root, rev: rev, epoch: epoch, onDisconnect: registrations, writeIDs: window.log())
                }), for: session)
        }
        sendRules(to: [session], batch: &batch)
        var state = sessions[session.id] ?? SessionState(link: session)
        state.isPeer = true
        sessions[session.id] = state
        replication.streams[session.id] = ReplicaStream(
            session: session, node: node, ackedRev: fromRev, ackedAt: now, sentAt: now)
        confirmations.streamStarted(session.id, ackedRev: fromRev)
        logger.info(
            "a replica is streaming",
            metadata: [
                "replica": "\(node)", "fromRev": "\(fromRev)", "mode": "\(entries == nil ? "snapshot" : "stream")",
            ])
        flushWaitingForReplicas(now: now, batch: &batch)
    }

    /// The snapshot at `rev` as `snapshot` lines: the on-disk snapshot file, base64, in chunks.
    static func snapshotLines(
        root: Node, rev: UInt64, epoch: UInt64, onDisconnect: OnDisconnectLog, writeIDs: WriteIDLog
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
        JSONWriter.writeLiteral(#","done":true}"#, into: &done)
        JSONWriter.writeLiteral("\n", into: &done)
        lines.append(done)
        return lines
    }

    /// The leader's rules (when it has any: a leader without rules leaves each replica its own)
    /// to replicas: when a stream starts, and whenever they change.
    func sendRules(to sessions: [SessionLink], batch: inout Batch) {
        guard let rules, !sessions.isEmpty else { return }
        var line: [UInt8] = []
        JSONValue.object([JSONMember("event", .string("rules")), JSONMember("rules", rules.document)])
            .serialize(into: &line)
        line.append(UInt8(ascii: "\n"))
        for session in sessions { batch.append(.line(line), for: session) }
    }

    /// A replica takes its leader's rules: kept in its data directory (as `setRules` does, so that
    /// a restart loads them) and in force from the next request on.
    private func adoptRules(_ document: JSONValue, now: Int64, batch: inout Batch) {
        guard rules?.document != document else { return }
        let ruleSet: RuleSet
        do { ruleSet = try RuleSet(document: document) } catch {
            logger.error("the leader's rules do not compile here; the old rules stay", metadata: ["error": "\(error)"])
            return
        }
        do { try rulesStore.accept(document, now: now) } catch {
            logger.error(
                "could not keep the leader's rules; they are in force until restart",
                metadata: ["file": "\(rulesStore.acceptedPath)", "error": "\(error)"])
        }
        install(ruleSet, now: now, batch: &batch)
        logger.notice("took the leader's rules", metadata: ["file": "\(rulesStore.acceptedPath)"])
    }

    /// A leader's records sent to its replicas before its own fsync: their lines (one buffer),
    /// and the streams that got them.
    struct StreamedEarly {
        let lines: [UInt8]
        let sessions: Set<UInt64>
    }

    /// Between the log's write and its fsync: a leader under `syncReplicas ≥ 1` sends the records
    /// to its replicas now, so that they flush while it does (docs/cluster.md, "Replication stream"). A stream with
    /// output waiting in this batch (its `replicate` answer, say) gets them after it, with the
    /// batch. Nil when nothing was sent.
    func streamBeforeSync(_ records: [EncodedRecord], batch: Batch) -> StreamedEarly? {
        guard case .leader(let epoch) = replication.role, replication.syncReplicas > 0 else { return nil }
        let ready = replication.streams.values.filter { !batch.hasOutputs(for: $0.session.id) }
        guard !ready.isEmpty else { return nil }
        let lines = streamLines(records, epoch: epoch)
        deliver(ready.map { ($0.session, [Outbound.line(lines)]) })
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
            if replication.syncReplicas == 0 { confirmations.reset(confirmedRev: database.rev) }
            retain(records, endingAt: database.rev) { _ in epoch }
            let lines = replication.streams.isEmpty ? [] : streamed?.lines ?? streamLines(records, epoch: epoch)
            for (id, stream) in replication.streams {
                if streamed?.sessions.contains(id) != true { batch.append(.line(lines), for: stream.session) }
                replication.bytesStreamed += UInt64(lines.count)
                replication.streams[id]?.sentAt = now
            }
            replication.recordsStreamed += UInt64(records.count * replication.streams.count)
            replication.confirmationUnsent = false
        case .replica, .candidate:
            // Records of a replica come from its leader; retained so that it can serve streams
            // if it is elected.
            retain(records, endingAt: database.rev) { replication.history.epoch(of: $0) }
            sendAck(database.rev, deferred: defersFsync)
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
        let confirmed = releasedRev
        replication.announcedConfirmedRev = max(replication.announcedConfirmedRev, confirmed)
        return WalLineWriter.lines(end: WalLineWriter.end(confirmedRev: confirmed)) { line in
            forEachRevision(of: records, endingAt: database.rev) { payload, isWrite, rev in
                line(payload, isWrite, rev, epoch)
            }
        }
    }

    private func retain(_ records: [EncodedRecord], endingAt last: UInt64, epoch: (UInt64) -> UInt64) {
        forEachRevision(of: records, endingAt: last) { payload, isWrite, rev in
            retained.append(RetainedLog.Entry(rev: rev, epoch: epoch(rev), isWrite: isWrite, payload: payload))
        }
    }

    /// Ends every stream (its replica reconnects and compares histories): records were sent
    /// before a fsync that then did not count.
    func endStreams(batch: inout Batch) {
        for stream in replication.streams.values { batch.append(.close, for: stream.session) }
        replication.streams = [:]
        confirmations.endStreams()
    }

    /// Replica: tells the leader that everything up to `rev` is in this node's log; after an
    /// append that deferred its fsync, once the fsync is done (`DeferredAcks`).
    private func sendAck(_ rev: UInt64, deferred: Bool) {
        guard let link = replication.link else { return }
        if deferred {
            deferredAcks.send(rev, on: link)
        } else {
            link.send(DeferredAcks.line(rev))
        }
    }

    /// A replica's acknowledgement, recorded in the gate by the connection that read it, on
    /// that connection's event loop `ioLoop`. The engine takes it at the start of its next turn
    /// (`takeAcknowledgements`) rather than in a turn of its own: at 50 connections, half a
    /// leader's turns were an acknowledgement alone. When no turn takes it within
    /// `confirmationDelay` (the leader is idle), the connection asks for one, which tells the
    /// replicas the new `confirmedRev`.
    package func acknowledgementArrived(on ioLoop: any EventLoop) {
        acknowledgementsUnseen.store(true, ordering: .releasing)
        guard !acknowledgementCheckScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ioLoop.scheduleTask(in: Self.confirmationDelay) {
            self.acknowledgementCheckScheduled.store(false, ordering: .releasing)
            if self.acknowledgementsUnseen.load(ordering: .acquiring) { self.submit(.cluster(.confirm)) }
        }
    }

    /// At the start of a turn: the acknowledgements the gate recorded since the last turn.
    func takeAcknowledgements(now: Int64, batch: inout Batch) {
        // Cleared before the gate is read: one recorded after the read sets it again.
        guard acknowledgementsUnseen.exchange(false, ordering: .acquiringAndReleasing) else { return }
        for (session, rev) in confirmations.streamAcknowledgements {
            guard let stream = replication.streams[session], rev > stream.ackedRev else { continue }
            replicaAcked(session: session, rev: rev, now: now, batch: &batch)
        }
    }

    /// The connection that read the acknowledgement already released what it confirms
    /// (`ConfirmationGate.acknowledged`); the engine keeps the stream's position, and tells the
    /// replicas the new confirmed revision.
    private func replicaAcked(session: UInt64, rev: UInt64, now: Int64, batch: inout Batch) {
        guard var stream = replication.streams[session] else { return }
        stream.ackedRev = max(stream.ackedRev, rev)
        stream.ackedAt = now
        replication.streams[session] = stream
        if replication.switchover != nil { checkSwitchover(now: now, batch: &batch) }
        guard replication.syncReplicas > 0, replication.role.isLeader else { return }
        if releasedRev > replication.announcedConfirmedRev { replication.confirmationUnsent = true }
    }

    /// The log made more of a leader's batches durable (Engine+Durability): a confirmation the
    /// replicas have not heard goes in the next records, or a heartbeat.
    func releasedRevMayHaveRisen() {
        guard replication.role.isLeader, releasedRev > replication.announcedConfirmedRev else { return }
        replication.confirmationUnsent = true
        confirmSoon(inboxIsEmpty: !hasQueuedWork)
    }

    /// At the end of a leader's turn, after its last commit: the heartbeat a `.confirm` asked
    /// for, unless the turn's records carried the confirmation.
    func sendDueHeartbeat(now: Int64, batch: inout Batch) {
        replication.heartbeatDue = false
        if replication.confirmationUnsent { sendHeartbeats(now: now, batch: &batch) }
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
        guard replication.confirmationUnsent, inboxIsEmpty, !replication.confirmationScheduled else { return }
        replication.confirmationScheduled = true
        loop.scheduleTask(in: Self.confirmationDelay) { self.submit(.cluster(.confirm)) }
    }

    private func sendHeartbeats(now: Int64, batch: inout Batch) {
        var line = Array(#"{"event":"heartbeat","rev":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: database.rev), into: &line)
        JSONWriter.writeLiteral(#","confirmedRev":"#, into: &line)
        let confirmed = releasedRev
        JSONWriter.writeInt(Int64(clamping: confirmed), into: &line)
        replication.announcedConfirmedRev = max(replication.announcedConfirmedRev, confirmed)
        JSONWriter.writeLiteral("}\n", into: &line)
        for (id, stream) in replication.streams {
            batch.append(.line(line), for: stream.session)
            replication.streams[id]?.sentAt = now
        }
        replication.confirmationUnsent = false
    }

    /// A peer session ended: its stream, if it had one, goes.
    func forgetStream(_ session: UInt64) {
        confirmations.streamEnded(session)
        if let stream = replication.streams.removeValue(forKey: session) {
            logger.info("a replica stopped streaming", metadata: ["replica": "\(stream.node)"])
        }
    }

    // MARK: Replica: the link

    private func handleLink(
        _ link: any LeaderLink, _ message: LinkMessage, advanced: inout UInt64, now: Int64, batch: inout Batch
    ) {
        replication.lastHeard = now
        switch message {
        case .started(let mode, let rev, _, let history, let origin):
            // The records this node keeps agree with the leader's up to here, so the leader's
            // history (and origin) describes them, and the epoch it now writes in.
            if var leaderHistory = EpochHistory(json: history) {
                leaderHistory.origin = origin ?? replication.history.origin
                adoptHistory(leaderHistory)
            }
            if mode == "snapshot" { replication.incomingSnapshot = (rev, []) }
            replication.linkStarted = true
            replication.announcedRestart = true
            replication.catchUpTo = rev
            for owner in replication.pendingDisconnects { link.send(Self.disconnectedLine(owner)) }
            replication.pendingDisconnects = []
            logger.info(
                "replicating from the leader",
                metadata: [
                    "leader": "\(link.leader)", "mode": "\(mode)", "fromRev": "\(database.rev)", "leaderRev": "\(rev)",
                ])
            publishPosition(state: mode == "snapshot" || rev > database.rev ? "catching_up" : "streaming")
        case .diverged(let keepRev):
            moveDivergentRecords(after: keepRev)
            replication.forceSnapshot = true
            link.close()
        case .refused(let reason):
            logger.error(
                "the leader refused replication", metadata: ["leader": "\(link.leader)", "reason": "\(reason)"])
            link.close()
        case .records(let run):
            for index in 0..<run.count {
                guard link.id == replication.link?.id else { return }  // as for each message
                handleRecord(index, of: run, link: link, advanced: &advanced, now: now, batch: &batch)
            }
        case .snapshotChunk(let rev, let data, let done):
            guard var incoming = replication.incomingSnapshot, incoming.rev == rev else { return }
            if let data, let bytes = try? Base64.decode(string: data) { incoming.bytes += bytes }
            replication.incomingSnapshot = incoming
            if done {
                replication.incomingSnapshot = nil
                installSnapshot(incoming.bytes, rev: rev, now: now, batch: &batch)
                noteCaughtUp()
            }
        case .heartbeat(let confirmedRev):
            confirmations.advance(to: confirmedRev, now: clock())
            if replication.role != .standalone, database.rev >= confirmedRev { publishPosition(state: "streaming") }
        case .rules(let document):
            adoptRules(document, now: now, batch: &batch)
        case .forwardAnswer(let forward, let members):
            forwardAnswered(forward, members: members, now: now, batch: &batch)
        case .goaway:
            link.close()
        case .closed:
            replication.linkStarted = false
            replication.link = nil
            replication.incomingSnapshot = nil
            linkLost(now: now, batch: &batch)
        }
    }

    /// Applies (or, for an onDisconnect change, records) one of the leader's records.
    private func handleRecord(
        _ index: Int, of run: LinkRecords, link: any LeaderLink, advanced: inout UInt64, now: Int64, batch: inout Batch
    ) {
        let record = run.records[index]
        let loggedAhead = replication.recordsLoggedAhead > 0
        if loggedAhead { replication.recordsLoggedAhead -= 1 }
        if record.isWrite, let write = run.writes[index] {
            guard record.rev == database.rev + 1 else {
                if record.rev > database.rev + 1 {
                    logger.error(
                        "a gap in the replication stream; reconnecting",
                        metadata: ["expected": "\(database.rev + 1)", "got": "\(record.rev)"])
                    link.close()
                }
                return
            }
            applyReplicated(write, payload: run.payload(at: index), loggedAhead: loggedAhead, now: now, batch: &batch)
        } else if !record.isWrite, !loggedAhead {
            guard let decoded = try? ReplicatedRecord.decodeChange(Array(run.payload(at: index))) else { return }
            batch.record(decoded)
        }
        if loggedAhead, replication.recordsLoggedAhead == 0 {
            // Every record logged ahead is applied: nothing of this turn is left to log, nor to
            // undo unless their fsync (deferred) fails.
            committed(&batch, durableLater: defersFsync)
        }
        if record.confirmedRev > advanced {
            confirmations.advance(to: record.confirmedRev, now: clock())
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
            writeIDs.remember(tag, rev: committed.rev, pushKey: committed.pushKey)
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
        assert(replication.recordsLoggedAhead == 0, "records logged ahead in an earlier turn were not applied")
        guard case .replica = replication.role, let storage, storageFailure == nil,
            replication.incomingSnapshot == nil, let current = replication.link?.id
        else { return }
        var records: [EncodedRecord] = []
        var rev = database.rev
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
        let deferring = defersFsync
        do { try storage.append(records, deferringSync: deferring) {} } catch {
            storageFailed(error)
            return
        }
        replication.recordsLoggedAhead = records.count
        retain(records, endingAt: rev) { replication.history.epoch(of: $0) }
        sendAck(rev, deferred: deferring)
    }

    /// Replays a committed write (in place when nothing needs the old tree), records it in the
    /// batch with its payload when one is given (and remembers its write id), then brings the
    /// change log and the views up to date.
    private func replay(
        _ committed: CommittedWrite, recordingWith payload: ArraySlice<UInt8>?, now: Int64, batch: inout Batch
    ) {
        var kept: [(path: Path, before: Node)]?
        var write: Write?
        var before: Node?
        if let (path, node) = committed.nonEmptySet, !views.watches(CollectionOfOne(path)) {
            // In place, its undo point found on the way down (as `applyInPlace` does).
            kept = [database.replay(settingNonEmpty: node, at: path, rev: committed.rev)]
        } else {
            write = Write.overwrites(committed.overwrites.map { ($0.path, PreparedValue(node: $0.node)) })
            before = database.root
            database.replay(committed)
        }
        if let payload {
            if let tag = committed.tag { writeIDs.remember(tag, rev: committed.rev, pushKey: committed.pushKey) }
            batch.record(committed, payload: payload)
        }
        if let kept {
            afterWrite(rev: committed.rev, kept: kept, now: now, batch: &batch)
        } else if let write, let before {
            afterWrite(write, before: before, rev: committed.rev, now: now, batch: &batch)
        }
    }

    /// A replica that has every record the leader had when the stream started is streaming.
    private func noteCaughtUp() {
        if replication.memberState != "streaming", replication.incomingSnapshot == nil,
            database.rev >= replication.catchUpTo
        {
            publishPosition(state: "streaming")
        }
    }

    /// Replaces the whole state with the leader's snapshot at `rev`.
    private func installSnapshot(_ file: [UInt8], rev: UInt64, now: Int64, batch: inout Batch) {
        if batch.hasUncommittedRecords { commit(&batch) }
        waitUntilDurable()
        do {
            let contents = try Storage.decodeSnapshotFile(file, rev: rev)
            try storage?.install(snapshot: file, rev: rev, onDisconnect: contents.onDisconnect)
            undurable.removeAll()
            confirmations.resetDurable(to: rev)
            deferredAcks.reset(durableRev: rev)
            let before = database.root
            confirmations.drop(
                above: rev,
                DatabaseError(.unavailable, "the records this answer showed were replaced by the leader's; try again"))
            database = Database(root: contents.root, rev: rev, limits: database.limits)
            batch.undo.reset(rev: database.rev)
            writeIDs = WriteIDWindow(
                recovered: contents.writeIDs, capacity: writeIDs.capacity,
                retentionSeconds: Int(writeIDs.retention / 1000),
                now: now)
            changeLog = ChangeLog(capacity: changeLog.capacity)
            retained.reset(at: rev)
            nextRegistrationID = max(nextRegistrationID, contents.onDisconnect.nextID)
            views.apply(write: nil, paths: [.root], before: before, after: database.root, rev: rev, batch: &batch)
            try storage?.saveHistory(replication.history)
            logger.info("installed the leader's snapshot", metadata: ["rev": "\(rev)", "bytes": "\(file.count)"])
            sendAck(rev, deferred: false)
        } catch {
            logger.error("could not install the leader's snapshot", metadata: ["error": "\(error)"])
            replication.link?.close()
        }
    }

    /// Takes the leader's history as this node's (the records up to the shared revision agree).
    private func adoptHistory(_ history: EpochHistory) {
        guard history != replication.history else { return }
        replication.history = history
        do { try storage?.saveHistory(history) } catch {
            logger.error("could not save the epoch history", metadata: ["error": "\(error)"])
        }
    }

    /// Moves the records this node wrote after `keepRev` in epochs the cluster abandoned into
    /// `divergent-<epoch>-<firstRev>.json` files (docs/cluster.md, "A node that comes back"); the snapshot that follows
    /// replaces the data.
    private func moveDivergentRecords(after keepRev: UInt64) {
        guard let storage else { return }
        let found: (writes: [CommittedWrite], complete: Bool)
        do { found = try storage.writes(after: keepRev) } catch {
            logger.error("could not read the divergent records", metadata: ["error": "\(error)"])
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
                logger.error(
                    "could not write the divergent records", metadata: ["file": "\(name)", "error": "\(error)"])
                continue
            }
            logger.warning(
                "moved records of an abandoned epoch aside: they are not in the data; inspect and re-apply them if needed",
                metadata: [
                    "file": "\(storage.directory)/\(name)", "records": "\(writes.count)", "fromRev": "\(first.rev)",
                    "toRev": "\(last.rev)", "complete": "\(found.complete)",
                ])
        }
        if !found.complete, database.rev > keepRev {
            // Some records were folded into a snapshot: the whole data as this node has it goes
            // aside too, so that nothing the snapshot from the leader replaces is lost.
            let name = "divergent-data-\(database.rev).json"
            var members = [
                JSONMember("rev", .int(Int64(clamping: database.rev))),
                JSONMember("afterRev", .int(Int64(clamping: keepRev))),
            ]
            if let origin = replication.history.origin { members.append(JSONMember("origin", .string(origin))) }
            members.append(JSONMember("data", database.root.jsonValue(format: .export)))
            do { try storage.writeFile(name, JSONValue.object(members).serialized) } catch {
                logger.error("could not write the divergent data", metadata: ["file": "\(name)", "error": "\(error)"])
                return
            }
            logger.warning(
                "records of an abandoned epoch were folded into a snapshot: moved this node's whole data aside; it is not in the data",
                metadata: [
                    "file": "\(storage.directory)/\(name)", "afterRev": "\(keepRev)", "rev": "\(database.rev)",
                ])
        }
    }

    // MARK: Roles

    private func changeRole(_ role: EngineRole, now: Int64, batch: inout Batch) {
        let previous = replication.role
        guard role != previous else { return }
        if batch.hasUncommittedRecords { commit(&batch) }
        replication.role = role
        replication.turnLeadershipProof = nil
        setLeads(role.isLeader)
        replication.fencedUntilRoleChange = false
        switch role {
        case .leader(let epoch):
            replication.link?.close()
            replication.link = nil
            reconcileWithLog(now: now, batch: &batch)
            var history = replication.history
            history.begin(epoch: epoch, firstRev: database.rev + 1)
            adoptHistory(history)
            if let storage { nextRegistrationID = max(nextRegistrationID, storage.onDisconnect.nextID) }
            if replication.syncReplicas == 0 { confirmations.reset(confirmedRev: database.rev) }
            retakeForwards(now: now, batch: &batch)
            runOrphanedQueues(now: now, batch: &batch)
        case .replica(let leader, _):
            stepDown(from: previous, batch: &batch)
            if let leader, replication.link?.leader != leader {
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
        logger.info(
            "cluster role changed",
            metadata: ["from": "\(previous.name)", "to": "\(role.name)", "epoch": "\(role.epoch)"])
        publishPosition(
            state: role.isLeader ? "leader" : role == .candidate(epoch: role.epoch) ? "candidate" : "catching_up")
        broadcastClusterEvent(batch: &batch)
    }

    /// A leader that stops leading: its streams end, waiting writes fail, and held answers become
    /// `unavailable` (their writes may or may not survive: the new leader decides).
    private func stepDown(from previous: EngineRole, batch: inout Batch) {
        guard previous.isLeader else { return }
        for stream in replication.streams.values {
            batch.append(.close, for: stream.session)
        }
        replication.streams = [:]
        confirmations.endStreams()
        for waiting in replication.waitingForReplicas {
            batch.append(
                .response(waiting.request.id, .failure(DatabaseError(.unavailable, "not the leader"))),
                for: waiting.session)
        }
        replication.waitingForReplicas = []
        confirmations.failAll(
            DatabaseError(
                .unavailable, "outcome unknown: the leader stepped down before the write was confirmed"))
    }

    /// A leader that cannot prove its lease (docs/cluster.md, "Election and fencing").
    var isFenced: Bool {
        guard replication.role.isLeader, let hooks = clusterHooks else { return false }
        return replication.fencedUntilRoleChange || !hooks.hasLeadershipProof()
    }

    /// The log may hold records the in-memory state dropped (a batch refused after the proof of
    /// leadership ran out): they are replayed, so that log and state agree before leading.
    private func reconcileWithLog(now: Int64, batch: inout Batch) {
        guard let storage, storage.lastRev > database.rev else { return }
        guard let found = try? storage.writes(after: database.rev), found.complete else {
            logger.error("the log is ahead of the state and cannot be replayed", metadata: ["rev": "\(database.rev)"])
            return
        }
        for write in found.writes { replay(write, recordingWith: nil, now: now, batch: &batch) }
        batch.undo.reset(rev: database.rev)
    }

    /// Closes the link to a leader this node no longer follows. Its later `.closed` is ignored (an
    /// earlier link's), so what was in flight on it is settled here: sent again on the next link,
    /// or answered "outcome unknown".
    private func dropLink(now: Int64, batch: inout Batch) {
        guard let link = replication.link else { return }
        link.close()
        replication.link = nil
        replication.linkStarted = false
        replication.incomingSnapshot = nil
        linkLost(now: now, batch: &batch)
    }

    func connectLink(to leader: String) {
        guard let hooks = clusterHooks else { return }
        replication.nextLinkID += 1
        // The log's position: a batch fenced after its append is in the log, not in memory, and
        // the leader's answer (diverged) moves it aside.
        let fromRev = replication.forceSnapshot ? 0 : max(database.rev, storage?.lastRev ?? 0)
        let history = replication.forceSnapshot ? EpochHistory() : replication.history
        replication.forceSnapshot = false
        // The first link of this run tells the leader that the connections of any earlier run of
        // this node are gone (their onDisconnect queues run), before anything this run sends.
        let first = replication.announcedRestart ? [] : [Self.disconnectedLine("\(replication.node)/*")]
        replication.link = hooks.openLink(
            id: replication.nextLinkID, leader: leader, fromRev: fromRev, history: history, firstLines: first)
        replication.linkOpenedAt = clock()
    }

    private func clusterTick(now: Int64, batch: inout Batch) {
        publishPosition(state: replication.memberState)
        if confirmations.isHolding {
            // Their writes stay held, and the events they raised are delivered if and when a
            // replica confirms them.
            confirmations.expire(
                now: now, timeoutMs: replication.syncTimeoutMs,
                DatabaseError(
                    .unavailable,
                    "not enough replicas confirmed within \(replication.syncTimeoutMs) ms (outcome unknown: a held write is applied if a replica confirms it later)"
                ))
        }
        replication.metrics?.update(
            role: replication.role, confirmedRev: releasedRev,
            lags: replication.streams.values.map { stream in
                ClusterMetrics.Lag(
                    node: stream.node, revs: database.rev - min(database.rev, stream.ackedRev),
                    ms: stream.ackedRev >= database.rev ? 0 : now - stream.ackedAt)
            }, recordsStreamed: replication.recordsStreamed, bytesStreamed: replication.bytesStreamed,
            syncWaitMs: replication.syncWaitMs + confirmations.waitedMs, streaming: replication.linkStarted)
        switch replication.role {
        case .leader:
            if replication.streams.values.contains(where: { now - $0.sentAt >= 1000 }) {
                sendHeartbeats(now: now, batch: &batch)
            }
            expireWaitingForReplicas(now: now, batch: &batch)
            checkSwitchover(now: now, batch: &batch)
        case .replica(let leader?, _):
            if replication.link == nil, now - replication.linkOpenedAt >= 500 {
                connectLink(to: leader)
            } else if replication.link != nil, now - replication.lastHeard > 5000, now - replication.linkOpenedAt > 5000
            {
                logger.warning("nothing from the leader for 5 s; reconnecting", metadata: ["leader": "\(leader)"])
                replication.link?.close()
            }
            expireForwards(now: now, batch: &batch)
        default:
            expireForwards(now: now, batch: &batch)
        }
    }

    package func publishPosition(state: String) {
        replication.memberState = state
        // The tick calls this every 100 ms: only a change is published.
        let position = PublishedPosition(
            role: replication.role, rev: database.rev, state: state, confirmedRev: releasedRev)
        guard position != replication.published else { return }
        replication.published = position
        if let hooks = clusterHooks {
            publishClusterObject(hooks.clusterObject(role: replication.role, rev: database.rev))
        }
        clusterHooks?.positionChanged(
            role: replication.role, rev: database.rev, lastEpoch: replication.history.epoch(of: database.rev),
            confirmedRev: releasedRev, state: state)
    }

    /// Every client connection of the node hears the change (`cluster` event).
    private func broadcastClusterEvent(batch: inout Batch) {
        guard let hooks = clusterHooks else { return }
        hooks.broadcast(ResponseEncoder.clusterEvent(hooks.clusterObject(role: replication.role, rev: database.rev)))
    }

    // MARK: Holding outputs until confirmed (syncReplicas ≥ 1)

    /// Delivers the turn's outputs, or holds those that show unconfirmed revisions
    /// (`ConfirmationGate`).
    func deliverOrHold(_ outputs: [(session: SessionLink, items: [Outbound])]) {
        let holding = replication.holdsOutputs
        confirmations.deliverOrHold(
            outputs, rev: database.rev, forReplicas: holding, forDisk: !undurable.isEmpty, now: holding ? clock() : 0)
    }

    // MARK: Leader: waiting for replicas

    /// Under `syncReplicas: N`, a write that arrives while fewer than N replicas stream waits
    /// (unapplied) for them, up to `syncTimeoutMs`.
    func needsReplicasFirst(_ request: Request, session: SessionLink, now: Int64) -> Bool {
        guard replication.syncReplicas > 0, replication.role.isLeader,
            replication.streams.count < replication.syncReplicas || !replication.waitingForReplicas.isEmpty
        else { return false }
        replication.waitingForReplicas.append((session, request, now))
        return true
    }

    private func flushWaitingForReplicas(now: Int64, batch: inout Batch) {
        guard replication.streams.count >= replication.syncReplicas, !replication.waitingForReplicas.isEmpty else {
            return
        }
        let waiting = replication.waitingForReplicas
        replication.waitingForReplicas = []
        for entry in waiting {
            replication.syncWaitMs += max(0, now - entry.since)
            decrementInFlight(entry.session)
            route(entry.request, session: entry.session, now: now, batch: &batch)
            runDeferredIfIdle(entry.session, batch: &batch)
        }
    }

    private func expireWaitingForReplicas(now: Int64, batch: inout Batch) {
        flushWaitingForReplicas(now: now, batch: &batch)
        while let first = replication.waitingForReplicas.first, now - first.since >= replication.syncTimeoutMs {
            replication.waitingForReplicas.removeFirst()
            let error = DatabaseError(
                .unavailable,
                "not enough replicas: \(replication.streams.count) of the \(replication.syncReplicas) required are streaming; the write was not applied"
            )
            batch.append(.response(first.request.id, .failure(error)), for: first.session)
            finishedInFlight(first.session, batch: &batch)
        }
    }
}

/// The `divergent-<epoch>-<firstRev>.json` file (docs/cluster.md, "A node that comes back"): each record as the request
/// that re-applies it.
package enum DivergentRecords {
    static func encode(epoch: UInt64, writes: [CommittedWrite], complete: Bool) -> [UInt8] {
        var records: [JSONValue] = []
        for write in writes {
            if write.overwrites.count == 1, let only = write.overwrites.first {
                records.append(
                    .object([
                        JSONMember("rev", .int(Int64(clamping: write.rev))), JSONMember("op", .string("set")),
                        JSONMember("path", .string(only.path.description)),
                        JSONMember("value", only.node.jsonValue(format: .export)),
                    ]))
            } else {
                let values = write.overwrites.map {
                    JSONMember(String($0.path.description.dropFirst()), $0.node.jsonValue(format: .export))
                }
                records.append(
                    .object([
                        JSONMember("rev", .int(Int64(clamping: write.rev))), JSONMember("op", .string("update")),
                        JSONMember("path", .string("/")), JSONMember("values", .object(values)),
                    ]))
            }
        }
        var members: [JSONMember] = [
            JSONMember("epoch", .int(Int64(clamping: epoch))),
            JSONMember("fromRev", .int(Int64(clamping: writes.first?.rev ?? 0))),
            JSONMember("toRev", .int(Int64(clamping: writes.last?.rev ?? 0))),
            JSONMember("records", .array(records)),
        ]
        if !complete { members.append(JSONMember("complete", .bool(false))) }
        var bytes = Array(JSONValue.object(members).prettyJSONString.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}

extension Outbound {
    /// Stream lines, snapshots and closes reach peers at once: they are how confirmation happens.
    var goesUnheld: Bool {
        switch self {
        case .line, .computed, .close: return true
        case .response, .event, .cancelled, .authRevoked: return false
        }
    }
}

/// Writes `wal` lines (docs/PROTOCOL.md, "Peer operations"): `{"event":"wal","rev":N,"epoch":E,"w"|"od":<payload>`,
/// then `end(confirmedRev:)`. The parts every line of a batch shares (its epoch, the confirmed
/// revision) are encoded once for the batch, not once a line.
package struct WalLineWriter {
    private static let start = Array(#"{"event":"wal","rev":"#.utf8)
    private static let writeField = Array(#","w":"#.utf8)
    private static let onDisconnectField = Array(#","od":"#.utf8)

    let epoch: UInt64
    /// `,"epoch":E`
    private let epochPart: [UInt8]

    private init(epoch: UInt64) {
        self.epoch = epoch
        var part = Array(#","epoch":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: epoch), into: &part)
        epochPart = part
    }

    /// The lines of the records `forEach` hands to its argument (payload, whether a write,
    /// revision, epoch; an onDisconnect record takes the revision of the write before it), each
    /// followed by `end`, in one buffer of exactly their size. `forEach` is called twice: once to
    /// size the buffer, once to fill it in place (appending each part to an array cost a generic
    /// append, and a retain of the part, each).
    static func lines(
        end: [UInt8],
        _ forEach: ((_ payload: ArraySlice<UInt8>, _ isWrite: Bool, _ rev: UInt64, _ epoch: UInt64) -> Void) -> Void
    ) -> [UInt8] {
        var writer = WalLineWriter(epoch: 0)
        var size = 0
        forEach { payload, isWrite, rev, epoch in
            if epoch != writer.epoch { writer = WalLineWriter(epoch: epoch) }
            size += writer.size(payload, isWrite: isWrite, rev: rev) + end.count
        }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var output = Output(buffer)
            forEach { payload, isWrite, rev, epoch in
                if epoch != writer.epoch { writer = WalLineWriter(epoch: epoch) }
                writer.write(payload, isWrite: isWrite, rev: rev, to: &output)
                output.put(end)
            }
            count = output.written
        }
    }

    /// The bytes of a record's line without its end.
    private func size(_ payload: ArraySlice<UInt8>, isWrite: Bool, rev: UInt64) -> Int {
        Self.start.count + Output.digits(rev) + epochPart.count
            + (isWrite ? Self.writeField.count : Self.onDisconnectField.count) + payload.count
    }

    /// A record's line without its end, into room made beforehand (`size`).
    private func write(_ payload: ArraySlice<UInt8>, isWrite: Bool, rev: UInt64, to output: inout Output) {
        output.put(Self.start)
        output.putDecimal(rev)
        output.put(epochPart)
        output.put(isWrite ? Self.writeField : Self.onDisconnectField)
        output.put(payload)
    }

    /// Room for lines whose size is known, written from the start; bytes past its end are
    /// dropped (the sizes were wrong), never written out of bounds.
    private struct Output {
        private let buffer: UnsafeMutableBufferPointer<UInt8>
        private(set) var written = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func put(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { put($0) }
        }

        mutating func put(_ bytes: ArraySlice<UInt8>) {
            bytes.withUnsafeBufferPointer { put($0) }
        }

        private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress, let base = buffer.baseAddress, bytes.count <= buffer.count - written
            else { return }
            (base + written).initialize(from: source, count: bytes.count)
            written += bytes.count
        }

        /// `value` in decimal.
        mutating func putDecimal(_ value: UInt64) {
            let count = Self.digits(value)
            guard count <= buffer.count - written else { return }
            var rest = value
            for index in stride(from: written + count - 1, through: written, by: -1) {
                buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            written += count
        }

        /// How many decimal digits `value` has.
        static func digits(_ value: UInt64) -> Int {
            var count = 1
            var rest = value
            while rest >= 10 {
                rest /= 10
                count += 1
            }
            return count
        }
    }

    /// The end of a line as streamed now: `,"confirmedRev":C}` and the newline.
    static func end(confirmedRev: UInt64) -> [UInt8] {
        var end = Array(#","confirmedRev":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: confirmedRev), into: &end)
        JSONWriter.writeLiteral("}\n", into: &end)
        return end
    }
}
