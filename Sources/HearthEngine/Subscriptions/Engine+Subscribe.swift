import HearthCore
import HearthProtocol

/// Subscriptions (line protocol) and event streams (HTTP): adding one with its first events, and
/// removing one.
extension Engine {
    /// Adds a subscription (line protocol) or an event stream (HTTP) when the rules allow the
    /// read and the connection's limit has room, answers `subscribed` and sends its first events
    /// (in cache mode resuming from `since` when the change log allows).
    func subscribe(
        _ session: SessionLink, path: Path, query: QuerySpec, delivery: ViewRegistry.Delivery, since: UInt64? = nil,
        knownHash: String? = nil, ruleQuery: RuleQuery?, identity: AuthContext?, now: Int64, id: RequestID,
        batch: inout Batch
    ) {
        func respond(_ body: ResponseBody) { batch.append(.response(id, body), for: session) }
        if let denial = readDenial("subscribe", at: path, query: ruleQuery, identity: identity, now: now) {
            respond(.failure(denial))
            return
        }
        let count = sessions[session.id]?.subscriptionCount ?? 0
        if count >= maxSubscriptionsPerConnection {
            respond(
                .failure(
                    DatabaseError(
                        .overloaded,
                        "this connection already has \(count) subscriptions (maxSubscriptionsPerConnection)")))
            return
        }
        switch indexCheck(query.order, at: path) {
        case .failure(let error):
            respond(.failure(error))
        case .success(let warning):
            let (sub, view) = views.subscribe(
                session: session, path: path, query: query, delivery: delivery, data: database.root,
                declared: isDeclaredIndex(query.order, at: path))
            grant(sub, of: session, path: path, query: ruleQuery)
            switch delivery {
            case .events(let events, let cache):
                let initial: InitialEvents
                if cache {
                    initial = cacheModeInitial(view, at: path, events: events, since: since)
                } else {
                    initial = InitialEvents(
                        bodies: view.initialEvents().filter { events.contains($0.type) }.map {
                            $0.type == .value
                                ? EventEncoder.valueEventBody(view, rev: database.rev)
                                : EventEncoder.childEventBody($0, rev: database.rev)
                        }, resumed: false)
                }
                respond(
                    .subscribed(
                        sub: sub, rev: database.rev, warning: warning, initial: cache ? initial.bodies.count : nil,
                        resumed: initial.resumed))
                for body in initial.bodies {
                    batch.append(.event(sub: sub, body: allocator.buffer(bytes: body)), for: session)
                }
            case .stream(let shape):
                let location = database.root.child(at: path)
                let framing = shape.framing(at: path)
                func first() -> [UInt8] {
                    shape.shapedByWrite
                        ? StreamEvents.initial(location, format: shape.format, framing: framing)
                        : StreamEvents.initial(view, location: location, format: shape.format, framing: framing)
                }
                guard shape.firebase else {
                    respond(.subscribed(sub: sub, rev: database.rev, warning: warning))
                    batch.append(.event(sub: sub, body: allocator.buffer(bytes: first())), for: session)
                    return
                }
                // Firebase's clients take the answer as "the data is complete": the data goes
                // first, unless the client holds it already.
                let holdsIt: Bool
                if let knownHash, !knownHash.isEmpty {
                    holdsIt =
                        Self.firebaseHash(shapedByWrite: shape.shapedByWrite, view: view, location: location)
                        == knownHash
                } else {
                    holdsIt = shape.shapedByWrite ? location.isEmpty : view.window.isEmpty
                }
                if !holdsIt {
                    batch.append(.event(sub: sub, body: allocator.buffer(bytes: first())), for: session)
                }
                respond(.subscribed(sub: sub, rev: database.rev, warning: warning))
            }
        }
    }

    /// The hash a Firebase client computes over what it holds for a listen: the location's value
    /// for a listen without a query, the window's children as one object for a query.
    static func firebaseHash(shapedByWrite: Bool, view: View, location: Node) -> String {
        if shapedByWrite || (view.spec.isUnfiltered && location.isLeaf) { return location.hash }
        return QueryResult.children(view.window, priority: nil).node.hash
    }

    func unsubscribe(_ sub: Int, reply: Reply, batch: inout Batch) {
        if views.unsubscribe(session: reply.session.id, sub: sub) {
            revokeGrant(sub, of: reply.session.id)
            respond(.done, to: reply, batch: &batch)
        } else {
            respond(
                .failure(DatabaseError(.notFound, "this connection has no subscription \(sub)")), to: reply,
                batch: &batch)
        }
    }
}
