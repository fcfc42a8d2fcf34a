import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage

/// Writes on any node (docs/cluster.md, "Writes on a replica"): a replica forwards writes to its leader with the
/// client's identity and answers once the leader acknowledged them and it applied their
/// revision, so that its client reads its own writes there. A session's later requests wait
/// behind its forwarded ones, so that its answers stay in order.
extension ClusterReplicator {
    /// Runs a request on a clustered node: cluster ops, writes (applied here when leading,
    /// forwarded otherwise) and everything else as on a standalone server.
    func route(_ request: Request, session: SessionLink, now: Int64, batch: inout Batch) {
        route(request, operation: request.operation, session: session, now: now, batch: &batch)
    }

    /// `route` with the request's operation already copied out (the engine's turn has it).
    package func route(_ request: Request, operation: Operation, session: SessionLink, now: Int64, batch: inout Batch) {
        if case .cluster(let op) = operation {
            if case .failover = op, !replication.role.isLeader, replication.isClustered {
                forward(request, session: session, now: now, batch: &batch)
                return
            }
            handleClusterRequest(op, request: request, session: session, now: now, batch: &batch)
            return
        }
        // A peer's own requests are never forwarded. (On a leader, where nothing is forwarded, a
        // peer's write takes the checks a client's does, and a client's write no lookup.)
        guard replication.isClustered, replication.role.isLeader || engine.sessions[session.id]?.isPeer != true else {
            engine.handle(request, operation: operation, session: session, now: now, batch: &batch)
            return
        }
        let id = session.id
        let needsLeader = operation.needsLeader
        // (Both maps are nearly always empty on a leader: looked into only when they are not.)
        if !replication.deferred.isEmpty && replication.deferred[id] != nil
            || !needsLeader && !replication.inFlight.isEmpty && (replication.inFlight[id] ?? 0) > 0
        {
            replication.deferred[id, default: []].append(request)
            return
        }
        guard needsLeader else {
            engine.handle(request, operation: operation, session: session, now: now, batch: &batch)
            return
        }
        guard replication.role.isLeader else {
            forward(request, session: session, now: now, batch: &batch)
            return
        }
        guard hasLeadershipProofThisTurn(), replication.leader.switchover == nil else {
            batch.append(.response(request.id, .failure(DatabaseError(.unavailable, "not the leader"))), for: session)
            return
        }
        if needsReplicasFirst(request, session: session, now: now) {
            replication.inFlight[id, default: 0] += 1
            return
        }
        engine.handle(request, operation: operation, session: session, now: now, batch: &batch)
    }

    /// Whether this leader could prove its lease, asked once per engine turn
    /// (`ReplicationState.turnLeadershipProof`).
    private func hasLeadershipProofThisTurn() -> Bool {
        if let proof = replication.leader.turnLeadershipProof { return proof }
        let proof = clusterHooks?.hasLeadershipProof() ?? true
        replication.leader.turnLeadershipProof = proof
        return proof
    }

    /// Sends `request` to the leader (or holds it until one is known).
    func forward(_ request: Request, session: SessionLink, now: Int64, batch: inout Batch) {
        guard let source = request.source else {
            batch.append(
                .response(
                    request.id,
                    .failure(DatabaseError(.unavailable, "not the leader: this request cannot be forwarded"))),
                for: session)
            return
        }
        replication.inFlight[session.id, default: 0] += 1
        if case .onDisconnect = request.operation { replication.replica.registeredOwners.insert(session.id) }
        guard let link = replication.replica.link else {
            replication.replica.unsent.append((session, request, now))
            return
        }
        let forward = replication.replica.nextForwardID
        replication.replica.nextForwardID += 1
        replication.replica.forwarded[forward] = ForwardedRequest(session: session, request: request, sentAt: now)
        var line = Array(#"{"op":"forward","id":"f"#.utf8)
        line += String(forward).utf8
        JSONWriter.writeLiteral(#"","auth":"#, into: &line)
        if let identity = engine.sessions[session.id]?.identity {
            ReplicatedRecord.encode(identity, into: &line)
        } else {
            JSONWriter.writeLiteral("null", into: &line)
        }
        if request.answerWithStoredValue { line += #","stored":true"#.utf8 }
        JSONWriter.writeLiteral(#","owner":"#, into: &line)
        JSONWriter.writeString("\(replication.node)/\(session.id)", into: &line)
        JSONWriter.writeLiteral(#","request":"#, into: &line)
        line += source
        JSONWriter.writeLiteral("}\n", into: &line)
        link.send(line)
    }

    /// The leader answered forwarded request `forward`: the answer waits until this node applied
    /// its revision.
    func forwardAnswered(_ forward: UInt64, members: [JSONMember], now: Int64, batch: inout Batch) {
        guard let forwarded = replication.replica.forwarded.removeValue(forKey: forward) else { return }
        let object = JSONValue.object(members)
        var rev: UInt64 = 0
        if object["ok"] == .bool(true), let value = object["rev"]?.int64Value, value > 0 { rev = UInt64(value) }
        let body = relayedBody(object, request: forwarded.request, rev: rev)
        replication.replica.answeredForwards.append((rev, forwarded.session, forwarded.request, body))
        releaseAnsweredForwards(batch: &batch)
    }

    /// Answers, in order, the forwarded requests whose revisions this node has applied.
    func releaseAnsweredForwards(batch: inout Batch) {
        while let first = replication.replica.answeredForwards.first, first.rev <= engine.database.rev {
            replication.replica.answeredForwards.removeFirst()
            var body = first.body
            if case .stored(_, let key, let rev) = body {
                body = .stored(engine.database.root.child(at: storedPath(first.request, key: key)), key: key, rev: rev)
            }
            batch.append(.response(first.request.id, body), for: first.session)
            finishedInFlight(first.session, batch: &batch)
        }
    }

    /// Where a write asked to be answered with its stored value wrote.
    private func storedPath(_ request: Request, key: String?) -> Path {
        switch request.operation {
        case .write(let write, let kind): return write.requestPath(kind).withoutPriority
        case .push(let base, _): return key.map { base.appending(Key($0)) } ?? base
        default: return .root
        }
    }

    /// One of the session's forwarded (or waiting) requests is answered: when none is left, its
    /// deferred requests run, in order.
    func finishedInFlight(_ session: SessionLink, batch: inout Batch) {
        decrementInFlight(session)
        runDeferredIfIdle(session, batch: &batch)
    }

    func decrementInFlight(_ session: SessionLink) {
        let left = (replication.inFlight[session.id] ?? 1) - 1
        replication.inFlight[session.id] = left > 0 ? left : nil
    }

    /// Runs the session's deferred requests, in order, once nothing of it is in flight.
    func runDeferredIfIdle(_ session: SessionLink, batch: inout Batch) {
        guard replication.inFlight[session.id] == nil,
            let deferred = replication.deferred.removeValue(forKey: session.id)
        else { return }
        for (index, request) in deferred.enumerated() {
            route(request, session: session, now: engine.clock(), batch: &batch)
            if (replication.inFlight[session.id] ?? 0) > 0, index + 1 < deferred.count {
                replication.deferred[session.id, default: []].append(contentsOf: deferred[(index + 1)...])
                return
            }
        }
    }

    /// The leader's answer as this node's: a committed write's revision and push key, a stale
    /// transaction's value, an error.
    private func relayedBody(_ object: JSONValue, request: Request, rev: UInt64) -> ResponseBody {
        switch request.operation {
        case .cluster, .setRules:
            if case .object(let members) = object { return .members(members) }
        default: break
        }
        guard object["ok"] == .bool(true) else {
            let error = object["error"]
            let code = error?["code"]?.stringValue.flatMap(DatabaseError.Code.init(rawValue:)) ?? .internal
            let retry = error?["retryAfterMs"]?.int64Value.map { Int($0) }
            return .failure(
                DatabaseError(code, error?["message"]?.stringValue ?? "the leader refused", retryAfterMs: retry))
        }
        var body: ResponseBody
        if object["committed"] == .bool(false), let value = object["value"] {
            var importer = NodeImporter(limits: engine.database.limits, baseDepth: 0)
            body = .stale(current: (try? importer.importNode(value)) ?? .empty)
        } else if object["committed"] == .bool(true) {
            body = .transactionCommitted(rev: rev)
        } else if case .string(let key)? = object["key"] {
            body = request.answerWithStoredValue ? .stored(.empty, key: key, rev: rev) : .pushed(key: key, rev: rev)
        } else if rev > 0 {
            body = request.answerWithStoredValue ? .stored(.empty, key: nil, rev: rev) : .committed(rev: rev)
        } else {
            body = .done
        }
        if object["duplicate"] == .bool(true) { body = .duplicate(body) }
        return body
    }

    /// The link to the leader is gone: requests sent on it either go again (those with a write id:
    /// the leader's write-id window recognises a write it already has) or fail with "outcome
    /// unknown" (docs/cluster.md, "Writes on a replica").
    func linkLost(now: Int64, batch: inout Batch) {
        let lost = replication.replica.forwarded.sorted { $0.key < $1.key }.map(\.value)
        replication.replica.forwarded = [:]
        for forwarded in lost {
            if forwarded.request.writeID != nil || !forwarded.request.operation.writesData {
                replication.replica.unsent.append((forwarded.session, forwarded.request, forwarded.sentAt))
            } else {
                let error = DatabaseError(
                    .unavailable,
                    "outcome unknown: the connection to the leader was lost before it answered (send writes with a wid to have them retried safely)"
                )
                replication.replica.answeredForwards.append((0, forwarded.session, forwarded.request, .failure(error)))
            }
        }
        releaseAnsweredForwards(batch: &batch)
    }

    /// This node now leads: requests held or lost on the way to the old leader run here.
    func retakeForwards(now: Int64, batch: inout Batch) {
        linkLost(now: now, batch: &batch)
        let unsent = replication.replica.unsent
        replication.replica.unsent = []
        for entry in unsent {
            decrementInFlight(entry.session)
            route(entry.request, session: entry.session, now: now, batch: &batch)
            runDeferredIfIdle(entry.session, batch: &batch)
        }
    }

    /// Sends held requests once a link exists; fails those older than `syncTimeoutMs`.
    func expireForwards(now: Int64, batch: inout Batch) {
        if let link = replication.replica.link, !replication.replica.unsent.isEmpty, link.isReady {
            let unsent = replication.replica.unsent
            replication.replica.unsent = []
            for entry in unsent {
                decrementInFlight(entry.session)
                forward(entry.request, session: entry.session, now: now, batch: &batch)
            }
        }
        var kept: [(session: SessionLink, request: Request, since: Int64)] = []
        for entry in replication.replica.unsent {
            if now - entry.since >= replication.syncTimeoutMs {
                let error = DatabaseError(
                    .unavailable, "no leader: none was reachable within \(replication.syncTimeoutMs) ms")
                replication.replica.answeredForwards.append((0, entry.session, entry.request, .failure(error)))
            } else {
                kept.append(entry)
            }
        }
        replication.replica.unsent = kept
        for (id, forwarded) in replication.replica.forwarded
        where now - forwarded.sentAt >= 2 * replication.syncTimeoutMs {
            replication.replica.forwarded[id] = nil
            let error = DatabaseError(.unavailable, "outcome unknown: the leader did not answer in time")
            replication.replica.answeredForwards.append((0, forwarded.session, forwarded.request, .failure(error)))
        }
        releaseAnsweredForwards(batch: &batch)
    }

    /// Leader: a request a replica forwarded, run as its client (rules are checked here, once).
    func runForwarded(
        _ inner: Request, identity: JSONValue, stored: Bool, owner: String?, peer: SessionLink, id: RequestID,
        now: Int64, batch: inout Batch
    ) {
        guard replication.role.isLeader else {
            batch.append(.response(id, .failure(DatabaseError(.unavailable, "not the leader"))), for: peer)
            return
        }
        let decoded: AuthContext?
        do { decoded = try ReplicatedRecord.decodeIdentity(identity) } catch {
            batch.append(.response(id, .failure(DatabaseError(.badRequest, "invalid forwarded identity"))), for: peer)
            return
        }
        // The replica builds a stored-value answer itself, from its own state at that revision.
        _ = stored
        let request = Request(id: id, operation: inner.operation, writeID: inner.writeID)
        // The peer session acts as the client for this one request.
        let peerIdentity = engine.sessions[peer.id]?.identity
        engine.sessions[peer.id]?.identity = decoded
        defer { engine.sessions[peer.id]?.identity = peerIdentity }
        if case .onDisconnect = inner.operation, let owner {
            let key = remoteOwnerKey(owner)
            let ownerLink = SessionLink(id: key, loop: peer.loop, receive: { _ in })
            engine.sessions[key] = engine.sessions[key] ?? SessionState(link: ownerLink)
            engine.sessions[key]?.identity = decoded
            handleForwardedRegistration(request, owner: key, peer: peer, now: now, batch: &batch)
            return
        }
        if case .cluster(.failover(let target)) = inner.operation {
            guard decoded?.isAdmin == true || engine.rules == nil else {
                batch.append(.response(id, .failure(engine.adminOnly("failover"))), for: peer)
                return
            }
            switchover(to: target, request: request, session: peer, now: now, batch: &batch)
            return
        }
        guard hasLeadershipProofThisTurn(), replication.leader.switchover == nil else {
            batch.append(.response(id, .failure(DatabaseError(.unavailable, "not the leader"))), for: peer)
            return
        }
        if case .setRules = inner.operation {
            engine.handle(request, session: peer, now: now, batch: &batch)
            return
        }
        if replication.syncReplicas > 0, replication.leader.streams.count < replication.syncReplicas {
            // Not applied; the client's node answers at once rather than after a wait here.
            let error = DatabaseError(
                .unavailable,
                "not enough replicas: \(replication.leader.streams.count) of the \(replication.syncReplicas) required are streaming; the write was not applied"
            )
            batch.append(.response(id, .failure(error)), for: peer)
            return
        }
        engine.handle(request, session: peer, now: now, batch: &batch)
    }

    /// The leader's own key for a replica's client connection `owner` (`<node>/<session>`), under
    /// which its onDisconnect queue is kept.
    func remoteOwnerKey(_ owner: String) -> UInt64 {
        if let key = replication.leader.remoteOwners[owner] { return key }
        replication.leader.nextRemoteOwner += 1
        let key = (UInt64(1) << 62) + replication.leader.nextRemoteOwner
        replication.leader.remoteOwners[owner] = key
        return key
    }

    private func handleForwardedRegistration(
        _ request: Request, owner: UInt64, peer: SessionLink, now: Int64, batch: inout Batch
    ) {
        guard case .onDisconnect(let action) = request.operation else { return }
        let identity = engine.sessions[owner]?.identity
        if let denial = engine.onDisconnectDenial(action, identity: identity, now: now) {
            batch.append(.response(request.id, .failure(denial)), for: peer)
            return
        }
        let connection = replication.leader.remoteOwners.first { $0.value == owner }?.key
        let change = engine.register(action, session: owner, identity: identity, connection: connection)
        if change.isEmpty {
            batch.append(.response(request.id, .done), for: peer)
        } else {
            batch.record(change)
            batch.appendProvisional(.response(request.id, .done), for: peer)
        }
    }

    /// Leader: a replica's client connection ended; its queue runs here.
    func runRemoteOnDisconnect(owner: String, now: Int64, batch: inout Batch) {
        if owner.hasSuffix("/*") {
            // The node restarted: the connections of its earlier run are gone.
            runQueues(ofNode: String(owner.dropLast(2)), now: now, batch: &batch)
            return
        }
        guard let key = replication.leader.remoteOwners.removeValue(forKey: owner) else { return }
        engine.sessions[key] = nil
        engine.runOnDisconnect(key, now: now, batch: &batch)
    }

    /// Leader: the queues of a lost node's connections run (its lease expired).
    func runQueues(ofNode node: String, now: Int64, batch: inout Batch) {
        let owners = replication.leader.remoteOwners.filter { $0.key.hasPrefix(node + "/") }
        for (owner, key) in owners {
            replication.leader.remoteOwners[owner] = nil
            engine.sessions[key] = nil
            engine.runOnDisconnect(key, now: now, batch: &batch)
        }
    }

    /// Notes that `session` has an onDisconnect queue (so its end is reported to whichever node
    /// leads) and returns its name for the registrations, `<node>/<session>`; nil standalone.
    package func registeringConnection(_ session: UInt64) -> String? {
        guard replication.isClustered else { return nil }
        replication.replica.registeredOwners.insert(session)
        return "\(replication.node)/\(session)"
    }

    /// A new leader takes over the onDisconnect queues the log holds: those of
    /// its own live connections and of live members' connections are kept, to run when those
    /// connections end or their node is lost; every other queue (the old leader's clients, a
    /// lost node's, a standalone run's) runs now (docs/cluster.md, "onDisconnect across nodes").
    func runOrphanedQueues(now: Int64, batch: inout Batch) {
        guard let storage = engine.storage else { return }
        let live = Set(clusterHooks?.liveMembers() ?? [])
        let tracked = Set(engine.onDisconnect.values.map(\.owner))
        var orphaned = 0
        for entries in storage.onDisconnect.queues {
            let queue = OnDisconnectQueue(recovered: entries)
            guard !tracked.contains(queue.owner) else { continue }
            if let connection = queue.connection, let slash = connection.lastIndex(of: "/"),
                let session = UInt64(connection[connection.index(after: slash)...])
            {
                let node = String(connection[..<slash])
                if node == replication.node, replication.replica.registeredOwners.contains(session) {
                    engine.onDisconnect[session] = queue
                    continue
                }
                if node != replication.node, live.contains(node) {
                    engine.onDisconnect[remoteOwnerKey(connection)] = queue
                    continue
                }
            }
            orphaned += 1
            engine.run(queue, connection: queue.owner, now: now, batch: &batch)
        }
        if orphaned > 0 {
            engine.logger.info(
                "ran the onDisconnect operations of connections no live node holds",
                metadata: ["connections": "\(orphaned)"])
        }
    }

    /// A connection of a clustered node ended: a replica's stream goes; a client's forwarded
    /// state goes, and the leader is told to run its onDisconnect queue.
    func clusterSessionEnded(_ sessionID: UInt64) {
        forgetStream(sessionID)
        replication.deferred[sessionID] = nil
        replication.inFlight[sessionID] = nil
        if replication.replica.registeredOwners.remove(sessionID) != nil { forwardDisconnect(sessionID) }
    }

    /// Replica: a client connection ended; the leader runs its queue.
    private func forwardDisconnect(_ sessionID: UInt64) {
        let owner = "\(replication.node)/\(sessionID)"
        guard let link = replication.replica.link, replication.replica.linkStarted else {
            replication.replica.pendingDisconnects.append(owner)  // told once a leader takes the link
            return
        }
        link.send(Self.disconnectedLine(owner))
    }

    /// `{"op":"disconnected","owner":…}`; `<node>/*` says every connection of an earlier run of
    /// the node is gone.
    static func disconnectedLine(_ owner: String) -> [UInt8] {
        var line = Array(#"{"op":"disconnected","owner":"#.utf8)
        JSONWriter.writeString(owner, into: &line)
        JSONWriter.writeLiteral("}\n", into: &line)
        return line
    }

    /// `failover` on the leader: stop taking writes, wait until the target has every record, and
    /// let it take the lead (docs/cluster.md, "Switchover").
    func switchover(to target: String?, request: Request, session: SessionLink, now: Int64, batch: inout Batch) {
        guard replication.role.isLeader, let hooks = clusterHooks else {
            batch.append(.response(request.id, .failure(DatabaseError(.unavailable, "not the leader"))), for: session)
            return
        }
        if target == replication.node {
            // Already done (a retry reaching the node the switchover chose).
            batch.append(
                .response(
                    request.id,
                    .members([
                        JSONMember("ok", .bool(true)), JSONMember("leader", .string(replication.node)),
                        JSONMember("epoch", .int(Int64(clamping: replication.role.epoch))),
                    ])), for: session)
            return
        }
        guard let chosen = target ?? hooks.bestReplica(excluding: replication.node) else {
            batch.append(
                .response(request.id, .failure(DatabaseError(.unavailable, "no replica is streaming to hand over to"))),
                for: session)
            return
        }
        guard replication.leader.streams.values.contains(where: { $0.node == chosen }) else {
            batch.append(
                .response(request.id, .failure(DatabaseError(.notFound, "\(chosen) is not a streaming replica"))),
                for: session)
            return
        }
        replication.leader.switchover = PendingSwitchover(target: chosen, session: session, id: request.id, since: now)
        checkSwitchover(now: now, batch: &batch)
    }

    /// Hands over once the target acknowledged every record; fails after `syncTimeoutMs`.
    func checkSwitchover(now: Int64, batch: inout Batch) {
        guard let pending = replication.leader.switchover, let hooks = clusterHooks else { return }
        if now - pending.since >= replication.syncTimeoutMs {
            replication.leader.switchover = nil
            batch.append(
                .response(
                    pending.id,
                    .failure(
                        DatabaseError(
                            .unavailable, "\(pending.target) did not catch up within \(replication.syncTimeoutMs) ms"))),
                for: pending.session)
            return
        }
        guard !pending.released,
            replication.leader.streams.values.contains(where: {
                $0.node == pending.target && $0.ackedRev >= engine.database.rev
            })
        else { return }
        replication.leader.switchover?.released = true
        let session = pending.session
        let id = pending.id
        let target = pending.target
        let answerTo = self.engine
        hooks.resign(to: target) { result in
            let body: ResponseBody
            switch result {
            case .success(let epoch):
                body = .members([
                    JSONMember("ok", .bool(true)), JSONMember("leader", .string(target)),
                    JSONMember("epoch", .int(Int64(clamping: epoch))),
                ])
            case .failure(let error):
                body = .failure(error)
            }
            answerTo.submit(.cluster(.answer(session, id, body)))
        }
    }
}

/// A `failover` waiting for its target to catch up.
struct PendingSwitchover {
    let target: String
    let session: SessionLink
    let id: RequestID
    let since: Int64
    var released = false
}

extension HearthProtocol.Operation {
    /// Whether only the leader may run it: writes, onDisconnect registrations, and the rules
    /// (the leader's are the cluster's).
    var needsLeader: Bool {
        switch self {
        case .write, .push, .onDisconnect, .setRules: return true
        default: return false
        }
    }
}
