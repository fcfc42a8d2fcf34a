import HearthCore
import HearthProtocol
import Logging

/// onDisconnect queues (docs/PROTOCOL.md, "onDisconnect"): registering edits the connection's queue and
/// logs the change, acknowledged once durable like a write; running a queue logs its write and
/// the queue's removal in the same batch, so that a queue runs exactly once even across crashes
/// (STORAGE.md "onDisconnect records").
extension Engine {
    /// Applies a registration or cancellation to the connection's queue; returns what the log
    /// must record (empty when nothing changed).
    func register(
        _ action: OnDisconnectAction, session: UInt64, identity: AuthContext?, connection: String? = nil
    ) -> OnDisconnectChange {
        var queue = onDisconnect[session] ?? OnDisconnectQueue(connection: connection)
        let change: OnDisconnectChange
        switch action {
        case .set(let path, let value):
            change = queue.set(path, value, auth: identity, nextID: &nextRegistrationID)
        case .update(let path, let values):
            change = queue.update(path, values, auth: identity, nextID: &nextRegistrationID)
        case .cancel(let path):
            change = queue.cancel(path)
        }
        onDisconnect[session] = queue.isEmpty ? nil : queue
        return change
    }

    /// Runs a queue whose connection is gone: each operation is checked again as the identity
    /// that registered it, against the data of this moment, and the permitted ones are applied as
    /// one write (docs/security.md, "Where the rules are checked"). The queue's removal goes into
    /// the same batch as the write, so both are in the log or neither is.
    func run(_ queue: OnDisconnectQueue, connection: UInt64, now: Int64, batch: inout Batch) {
        if let write = permittedOnDisconnectWrite(queue, session: connection, now: now),
            case .committed(var logged, let before) = database.apply(write, now: now)
        {
            if logsWriteAuthors.load(ordering: .relaxed) {
                logged.author = WriteAuthor(time: now, identity: queue.entries.first?.auth)
            }
            batch.record(logged)
            afterWrite(write, before: before, rev: logged.rev, now: now, batch: &batch)
            logger.debug(
                "ran onDisconnect operations",
                metadata: [
                    "connection": "\(connection)", "rev": "\(logged.rev)", "operations": "\(queue.entries.count)",
                ])
        }
        batch.record(queue.removal)
    }

    /// At start, before any connection: runs the queues the log kept whose connections no longer
    /// exist — after a restart, all of them (they belonged to the previous run, which ended
    /// without running them: a crash, or a storage failure) — in the order of their first
    /// registration, each as one write with server values resolved now, and commits them with
    /// their removals. Engine thread.
    package func runOrphanedOnDisconnect(_ queues: [[OnDisconnectRegistration]]) {
        loop.preconditionInEventLoop()
        guard !queues.isEmpty else { return }
        let now = clock()
        var batch = Batch(rev: database.rev)
        let before = database.rev
        for entries in queues {
            let queue = OnDisconnectQueue(recovered: entries)
            run(queue, connection: queue.owner, now: now, batch: &batch)
        }
        commit(&batch)
        logger.info(
            "ran the onDisconnect operations left by connections of the previous run",
            metadata: [
                "connections": "\(queues.count)", "operations": "\(queues.reduce(0) { $0 + $1.count })",
                "revs": "\(before + 1)…\(database.rev)",
            ])
    }

    /// Adds to (or clears) the connection's onDisconnect queue when the rules allow it; a change
    /// is acknowledged once the log has it, like a write.
    func registerOnDisconnect(
        _ action: OnDisconnectAction, identity: AuthContext?, now: Int64, reply: Reply, batch: inout Batch
    ) {
        if let denial = onDisconnectDenial(action, identity: identity, now: now) {
            respond(.failure(denial), to: reply, batch: &batch)
            return
        }
        let session = reply.session.id
        let change = register(
            action, session: session, identity: identity, connection: replicator?.registeringConnection(session))
        if change.isEmpty {
            respond(.done, to: reply, batch: &batch)
        } else {
            batch.record(change)
            acknowledge(.done, to: reply, batch: &batch)
        }
    }

    /// Runs the queue of a connection that ended.
    func runOnDisconnect(_ sessionID: UInt64, now: Int64, batch: inout Batch) {
        guard let queue = onDisconnect.removeValue(forKey: sessionID) else { return }
        // Only a node that applies writes runs a queue; a replica's leader runs its clients'.
        if let replicator, !replicator.runsOnDisconnectQueues { return }
        guard storageFailure == nil else {
            logger.error(
                "onDisconnect operations not run: storage failed; the log keeps them and they run when the server restarts",
                metadata: ["connection": "\(sessionID)"])
            return
        }
        run(queue, connection: sessionID, now: now, batch: &batch)
    }
}
