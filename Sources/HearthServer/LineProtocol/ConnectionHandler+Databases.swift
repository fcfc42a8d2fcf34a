import HearthCore
import HearthJSON
import HearthProtocol
import NIOCore

/// The database requests a line-protocol connection answers itself: `use` (the connection's
/// first request) binds it to a database, and admins' lifecycle and trigger requests go to the
/// registry (a trigger request acts on the connection's database).
/// While one is answered, the lines after it wait (`heldLines`), so that answers stay in order
/// and a `use` decides which engine every later request goes to.
extension ConnectionHandler {
    func answer(_ request: DatabaseRequest, id: RequestID, context: ChannelHandlerContext) {
        slots.append(.awaitingServer)
        holdingLines = true
        submitBatch()
        let loop = context.eventLoop
        let future: EventLoopFuture<[JSONMember]>
        switch request {
        case .use(let name):
            if linesDecoded != 1 {
                future = loop.makeFailedFuture(
                    DatabaseError(
                        .badRequest,
                        "use must be the connection's first request: a connection chooses its database once, at its start"
                    ))
            } else {
                let bound = NIOLoopBound(self, eventLoop: loop)
                let evict: @Sendable () -> Void = {
                    loop.execute { bound.value.evicted(from: name) }
                }
                future = databases.lease(name, on: loop, connection: true, evict: evict).map { lease in
                    bound.value.bind(to: lease)
                    return [JSONMember("db", .string(lease.database.name.text))]
                }
            }
        case .triggers(let triggerRequest):
            if security.isOpen || serverAdmin {
                future = databases.perform(triggerRequest, database: lease?.database.name.text, on: loop)
            } else {
                future = loop.makeFailedFuture(
                    DatabaseError(.permissionDenied, "managing a database's triggers needs an admin secret"))
            }
        default:
            if security.isOpen || serverAdmin {
                if case .delete(let name, _) = request, let own = lease, own.database.name.text == name {
                    // Deleting its own database: the connection leaves it first (its
                    // onDisconnect operations run there), answers, then closes.
                    engine.submit(.disconnected(sessionID: self.id))
                    own.release()
                    lease = nil
                    closesAfterAnswer = true
                }
                future = databases.perform(request, on: loop)
            } else {
                future = loop.makeFailedFuture(
                    DatabaseError(.permissionDenied, "listing, creating and deleting databases needs an admin secret"))
            }
        }
        future.assumeIsolated().whenComplete { [self] result in
            guard let context = self.context, !closing else { return }
            var line: [UInt8]
            switch result {
            case .success(let members):
                line = Array(
                    JSONValue.object(
                        [JSONMember("id", id), JSONMember("ok", .bool(true))] + members
                    ).jsonString.utf8)
                line.append(UInt8(ascii: "\n"))
            case .failure(let error):
                let error = error as? DatabaseError ?? DatabaseError(.internal, "\(error)")
                line = []
                ResponseEncoder.encode(id: id, .failure(error), into: &line)
                connectionMetrics.requestRejected(errorCode: error.code)
            }
            fillServerSlot(line, context: context)
            if closesAfterAnswer {
                heldLines.removeAll()
                send(
                    ResponseEncoder.errorEvent(DatabaseError(.notFound, "this connection's database was deleted")),
                    context: context)
                closeAfterPendingResponses(context: context)
                return
            }
            releaseHeldLines(context: context)
        }
    }

    /// The connection now works on `lease`'s database (a connection that closed meanwhile lets
    /// go of it at once).
    func bind(to lease: DatabaseRegistry.Lease) {
        guard context != nil, !closing else {
            lease.release()
            return
        }
        self.lease = lease
        engine = lease.engine
    }

    /// The database was deleted: the connection closes with an error event.
    func evicted(from name: String) {
        guard let context, !closing else { return }
        refuse(DatabaseError(.notFound, "database \"\(name)\" was deleted"), context: context)
    }

    /// Puts the connection's own answer in its slot (the last), sent once the engine's answers
    /// before it are.
    private func fillServerSlot(_ line: [UInt8], context: ChannelHandlerContext) {
        guard case .awaitingServer? = slots.last else { return }
        if slots.count == 1 {
            slots.removeFirst()
            send(line, context: context)
        } else {
            slots[slots.index(before: slots.endIndex)] = .ready(line)
        }
        flushOutbox(context: context)
        if closeWhenIdle, slots.isEmpty { closeOnceDrained(context: context) }
    }

    /// Handles the lines that waited, until one of them is a database request again.
    private func releaseHeldLines(context: ChannelHandlerContext) {
        holdingLines = false
        while !holdingLines, !closing, let line = heldLines.popFirst() {
            line.withUnsafeBytes { received(.line($0), context: context) }
        }
        guard !holdingLines else { return }
        submitBatch()
        flushOutbox(context: context)
        resumeReadingIfNeeded(context: context)
    }
}
