import HearthCore
import HearthProtocol

/// Where one request's answer goes: its connection and id, counted under its operation.
struct Reply {
    let id: RequestID
    let session: SessionLink
    let op: OperationLabel
}

/// One function per family of operations; this file only routes a request to its family, after
/// the checks every request passes (a failed log refuses changes, a write id seen before gets
/// its first answer).
extension Engine {
    func handle(_ request: Request, session: SessionLink, now: Int64, batch: inout Batch) {
        handle(request, operation: request.operation, session: session, now: now, batch: &batch)
    }

    /// `handle` with the request's operation already copied out of its box (once per turn).
    func handle(
        _ request: Request, operation: Operation, session: SessionLink, now: Int64, batch: inout Batch
    ) {
        let reply = Reply(id: request.id, session: session, op: OperationLabel(operation))
        tally.request(reply.op)
        if operation.writesData || operation.changesOnDisconnect, storageFailure != nil {
            respond(.failure(unavailable), to: reply, batch: &batch)
            return
        }
        if let limit = storedBytesLimit, operation.writesData, !operation.isRemove, let storage,
            storage.walBytes + storage.snapshotBytes > limit
        {
            let error = DatabaseError(
                .quotaExceeded,
                "the database holds more than its quota of \(limit) bytes on disk (maxBytes); remove data before writing more"
            )
            respond(.failure(error), to: reply, batch: &batch)
            return
        }
        if let id = request.writeID, let answer = rememberedAnswer(for: id, now: now) {
            // Not applied again; a duplicate's answer waits, like the write's, for the log.
            if case .failure = answer {
                respond(answer, to: reply, batch: &batch)
            } else {
                acknowledge(answer, to: reply, batch: &batch)
            }
            return
        }
        let identity = sessions[session.id]?.identity
        switch operation {
        case .get(let path, let options):
            get(path, options: options, identity: identity, now: now, reply: reply, batch: &batch)
        case .write(let write, let kind):
            apply(write, kind: kind, request: request, identity: identity, now: now, reply: reply, batch: &batch)
        case .push(let path, let value):
            push(value, under: path, request: request, identity: identity, now: now, reply: reply, batch: &batch)
        case .subscribe(let path, let query, let events, let ruleQuery, let cache):
            subscribe(
                session, path: path, query: query, delivery: .events(events, cache: cache != nil),
                since: cache?.since, ruleQuery: ruleQuery, identity: identity, now: now, id: request.id,
                batch: &batch)
        case .stream(let path, let query, let format, let ruleQuery, let firebase):
            subscribe(
                session, path: path, query: query ?? .default,
                delivery: .stream(.init(format: format, shapedByWrite: query == nil, firebase: firebase != nil)),
                knownHash: firebase?.knownHash, ruleQuery: ruleQuery, identity: identity, now: now, id: request.id,
                batch: &batch)
        case .unsubscribe(let sub):
            unsubscribe(sub, reply: reply, batch: &batch)
        case .onDisconnect(let action):
            registerOnDisconnect(action, identity: identity, now: now, reply: reply, batch: &batch)
        case .ping:
            respond(.pong(serverTime: now), to: reply, batch: &batch)
        case .auth(let step):
            respond(changeIdentity(step, of: session, now: now, batch: &batch), to: reply, batch: &batch)
        case .setRules(let ruleSet):
            respond(setRules(ruleSet, identity: identity, now: now, batch: &batch), to: reply, batch: &batch)
        case .getRules:
            respond(getRules(identity: identity), to: reply, batch: &batch)
        case .simulate(let simulated, let operation):
            respond(simulate(operation, as: simulated, asker: identity, now: now), to: reply, batch: &batch)
        case .cluster:
            // A cluster member's requests go to its replicator (`Engine.take`): this one is not.
            batch.append(
                .response(reply.id, .failure(DatabaseError(.badRequest, "this server is not part of a cluster"))),
                for: session)
        case .database:
            // The transports answer these (they hold the databases); one reaching an engine is
            // out of place, e.g. a `use` forwarded by a replica.
            respond(
                .failure(DatabaseError(.badRequest, "use must be the connection's first request")), to: reply,
                batch: &batch)
        }
    }

    /// Answers at once; a failure is counted under the request's operation and code.
    func respond(_ body: ResponseBody, to reply: Reply, batch: inout Batch) {
        if case .failure(let error) = body { tally.error(reply.op, error.code) }
        batch.append(.response(reply.id, body), for: reply.session)
    }

    /// Answers once the batch's records are durable (a refused commit turns it into an error).
    func acknowledge(_ body: ResponseBody, to reply: Reply, batch: inout Batch) {
        tally.acknowledged(reply.op)
        batch.appendProvisional(.response(reply.id, body), for: reply.session)
    }
}

extension HearthProtocol.Operation {
    /// Whether the operation shows data to the client (so earlier writes must be durable first).
    var readsData: Bool {
        switch self {
        case .get, .subscribe, .stream, .simulate: return true
        case .write(.transaction, _): return true  // a stale answer shows the current value
        default: return false
        }
    }

    /// Whether it is a cluster op (`ClusterRequest`).
    var isCluster: Bool {
        if case .cluster = self { return true }
        return false
    }

    /// Whether the operation changes data.
    var writesData: Bool {
        switch self {
        case .write, .push: return true
        default: return false
        }
    }

    /// Whether the operation is a `remove` (which a database over its quota still takes).
    var isRemove: Bool {
        if case .write(_, kind: .remove) = self { return true }
        return false
    }

    /// Whether the operation changes the connection's onDisconnect queue (which the log keeps).
    var changesOnDisconnect: Bool {
        if case .onDisconnect = self { return true }
        return false
    }
}
