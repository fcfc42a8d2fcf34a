import HearthCore
import NIOCore

/// Creating, listing, inspecting and deleting databases (admins only: the transports check,
/// `DatabaseAdmin`). Creating makes the folder and opens nothing; deleting closes the database,
/// closes the connections that use it, and moves its folder into the trash (or removes it).
extension DatabaseRegistry {
    /// Creates database `name` (empty, closed until first used).
    func create(_ name: String) throws(DatabaseError) -> DatabaseInfo {
        let name = try DatabaseName(name)
        let outcome = state.withLockedValue { state -> Result<Void, DatabaseError> in
            Result { () throws(DatabaseError) in try record(name, in: &state) }
        }
        try outcome.get()
        context.logger.notice("created a database", metadata: ["db": "\(name)"])
        return try info(name.text)
    }

    /// Makes `name`'s folder and records it, unless it may not be made.
    private func record(_ name: DatabaseName, in state: inout State) throws(DatabaseError) {
        if state.shutDown { throw DatabaseError(.unavailable, "the server is shutting down") }
        if clustered {
            throw DatabaseError(
                .unavailable,
                "a cluster serves only its default database \"\(defaultName)\" (docs/cluster.md, \"Databases\")")
        }
        if name == defaultName || state.known.contains(name) {
            throw DatabaseError(.badRequest, "database \"\(name)\" already exists")
        }
        if case .closing = state.entries[name] {
            throw DatabaseError(.overloaded, "database \"\(name)\" is being deleted; try again", retryAfterMs: 500)
        }
        if let refusal = roomForOneMore(state) { throw refusal }
        guard try layout.makeFolder(for: name) else {
            throw DatabaseError(.badRequest, "database \"\(name)\" already exists (its folder does)")
        }
        state.known.insert(name)
    }

    /// Every database, the default one first, then by name.
    func list() -> [DatabaseInfo] {
        let names = state.withLockedValue { $0.known }.sorted()
        return [describe(defaultName)] + names.map { describe($0) }
    }

    /// One database's information; `not_found` for an unknown name.
    func info(_ name: String) throws(DatabaseError) -> DatabaseInfo {
        let name = try DatabaseName(name)
        guard name == defaultName || state.withLockedValue({ $0.known.contains(name) }) else {
            throw Self.unknown(name)
        }
        return describe(name)
    }

    private func describe(_ name: DatabaseName) -> DatabaseInfo {
        let (database, connections): (HostedDatabase?, Int) = state.withLockedValue { state in
            if name == defaultName { return (defaultDatabase, state.defaultConnections) }
            if case .open(let open) = state.entries[name] { return (open.database, open.connections) }
            return (nil, 0)
        }
        let own = settings.settings(for: name.text)
        return DatabaseInfo(
            name: name, isDefault: name == defaultName, rev: database?.rev, bytes: layout.bytes(of: name),
            connections: connections, directory: layout.directory(of: name), maxBytes: own.maxBytes,
            maxConnections: own.maxConnections)
    }

    /// Waits (up to two seconds) for the connections of a database being deleted to let go of
    /// it, so that what they hand its engine as they close (their onDisconnect operations) comes
    /// before the engine stops; then nothing more is leased until it is gone.
    private func drain(_ name: DatabaseName, done: EventLoopFuture<Void>) async {
        for _ in 0..<200 {
            let users: Int = state.withLockedValue { state in
                guard case .draining(let open, _) = state.entries[name] else { return 0 }
                return open.users
            }
            if users == 0 { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        state.withLockedValue { $0.entries[name] = .closing(done: done) }
    }

    /// Deletes database `name`: its connections are closed, its engine stops, and its folder
    /// moves into the trash (`purge`: is removed). Completes on `loop` with where the data went.
    func delete(_ requested: String, purge: Bool, on loop: any EventLoop) -> EventLoopFuture<DatabaseDeletion> {
        let name: DatabaseName
        do { name = try DatabaseName(requested) } catch { return loop.makeFailedFuture(error) }
        guard name != defaultName else {
            return loop.makeFailedFuture(
                DatabaseError(
                    .badRequest,
                    "the default database \"\(name)\" cannot be deleted: it is the data directory itself"))
        }
        enum Step {
            case refuse(DatabaseError)
            case wait(EventLoopFuture<Void>)
            case close(OpenDatabase?, EventLoopPromise<Void>)
        }
        let promise = loop.makePromise(of: Void.self)
        let step: Step = state.withLockedValue { state in
            guard state.known.contains(name) else { return .refuse(Self.unknown(name)) }
            switch state.entries[name] {
            case .opening(let done), .closing(let done), .draining(_, let done):
                return .wait(done)
            case .open(let open):
                state.entries[name] = .draining(open, done: promise.futureResult)
                return .close(open, promise)
            case nil:
                state.entries[name] = .closing(done: promise.futureResult)
                return .close(nil, promise)
            }
        }
        switch step {
        case .refuse(let error):
            promise.succeed()  // nothing was closing under it
            return loop.makeFailedFuture(error)
        case .wait(let done):
            promise.succeed()
            return done.hop(to: loop).flatMap { self.delete(name.text, purge: purge, on: loop) }
        case .close(let open, let promise):
            let layout = self.layout
            let now = context.clock()
            let logger = context.logger
            let result = loop.makeFutureWithTask { () async throws(DatabaseError) -> DatabaseDeletion in
                if let open {
                    for evict in open.evictions.values { evict() }
                    await self.drain(name, done: promise.futureResult)
                    await open.database.close()
                }
                defer {
                    self.state.withLockedValue { state in
                        state.entries[name] = nil
                        if let open { state.load[open.loopIndex] -= 1 }
                    }
                }
                let movedTo: String?
                if purge {
                    try layout.purge(name)
                    movedTo = nil
                } else {
                    movedTo = try layout.moveToTrash(name, now: now)
                }
                self.state.withLockedValue { _ = $0.known.remove(name) }
                logger.notice(
                    "deleted a database", metadata: ["db": "\(name)", "movedTo": "\(movedTo ?? "(purged)")"])
                return DatabaseDeletion(name: name, movedTo: movedTo)
            }
            result.whenComplete { _ in promise.succeed() }
            return result
        }
    }
}
