import HearthCore
import HearthJSON
import HearthProtocol
import NIOCore
import NIOHTTP1

/// The database each HTTP request addresses (`?ns=` or the host): the connection's engine
/// session lives on one database at a time, and moves when a request names another (requests on
/// one connection are served one after another, so no answer of the old database is pending).
extension HTTPConnectionHandler {
    /// Runs `body` once the connection's session is on the database `call` addresses; answers
    /// the request with the error when that database cannot be used.
    func onDatabase(
        of call: RESTCall, head: HTTPRequestHead, context: ChannelHandlerContext, _ body: @escaping () -> Void
    ) {
        if isOnDatabase(of: call) {
            body()
            return
        }
        let wanted = database(of: call)
        let channel = context.channel
        let evict: @Sendable () -> Void = { channel.close(promise: nil) }
        if let now = databases.leaseNow(wanted, connection: true, evict: evict) {
            switchDatabase(now, name: wanted, call: call, head: head, context: context, then: body)
            return
        }
        state = .waiting(Exchange(head: head, call: call, identityAnswers: 0))
        databases.lease(wanted, on: context.eventLoop, connection: true, evict: evict).assumeIsolated()
            .whenComplete { [self] result in
                guard case .waiting = state, let context = self.context else {
                    if case .success(let lease) = result { lease.release() }
                    return
                }
                state = .discarding
                switchDatabase(result, name: wanted, call: call, head: head, context: context, then: body)
            }
    }

    /// The database `call` addresses; nil: the default one.
    func database(of call: RESTCall) -> String? {
        call.database == databases.defaultName.text ? nil : call.database
    }

    /// Whether the connection's session is on the database `call` addresses already.
    func isOnDatabase(of call: RESTCall) -> Bool {
        lease != nil && database(of: call) == boundDatabase
    }

    private func switchDatabase(
        _ result: Result<DatabaseRegistry.Lease, any Error>, name: String?, call: RESTCall, head: HTTPRequestHead,
        context: ChannelHandlerContext, then body: () -> Void
    ) {
        switch result {
        case .success(let newLease):
            leaveDatabase()
            lease = newLease
            engine = newLease.engine
            boundDatabase = name
            body()
        case .failure(let error):
            let refused = RESTRender.failure(
                error as? DatabaseError ?? DatabaseError(.internal, "\(error)"), call: call)
            countRejection(refused)
            finish(RESTResponse.error(refused), head: head, call: call, context: context)
        }
    }

    /// Ends the connection's session on its database and lets go of it; the next request
    /// addresses a database afresh.
    func leaveDatabase() {
        guard let old = lease else { return }
        engine.submit(.disconnected(sessionID: id))
        old.release()
        lease = nil
        engineIdentity = ""
        engine = databases.defaultDatabase.engine
        boundDatabase = nil
    }

    /// `/.well-known/hearth/databases…`: admins list, inspect, create and delete databases;
    /// `/.well-known/hearth/triggers…`: they manage the triggers of the database the request
    /// addresses.
    func serveDatabases(
        _ request: DatabaseRequest, call: RESTCall, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        if let refused = adminRefusal(call) {
            countRejection(refused)
            finish(RESTResponse.error(refused), head: head, call: call, context: context)
            return
        }
        if case .delete(let name, _) = request, name == boundDatabase {
            // The connection leaves the database first: deleting it closes the connections that
            // use it, and this one must live to carry the answer.
            leaveDatabase()
        }
        state = .waiting(Exchange(head: head, call: call, identityAnswers: 0))
        let answer =
            if case .triggers(let triggerRequest) = request {
                databases.perform(triggerRequest, database: call.database, on: context.eventLoop)
            } else {
                databases.perform(request, on: context.eventLoop)
            }
        answer.assumeIsolated().whenComplete { [self] result in
            guard case .waiting = state, let context = self.context else { return }
            switch result {
            case .success(let members):
                let status: HTTPResponseStatus =
                    switch request {
                    case .create, .triggers(.add): .created
                    default: .ok
                    }
                // One database or trigger is the body itself; a list or a deletion is an object.
                let body =
                    members.count == 1 && (members[0].key == "database" || members[0].key == "trigger")
                    ? members[0].value : .object(members)
                finish(
                    RESTResponse(status: status, body: Array(body.jsonString.utf8)), head: head, call: call,
                    context: context)
            case .failure(let error):
                let refused = RESTRender.failure(
                    error as? DatabaseError ?? DatabaseError(.internal, "\(error)"), call: call)
                countRejection(refused)
                finish(RESTResponse.error(refused), head: head, call: call, context: context)
            }
        }
    }
}
