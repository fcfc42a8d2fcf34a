import HearthCore
import HearthEngine
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The daemon's databases by name: which exist, which are open and on which engine thread, who
/// uses each. Connections and requests take a `Lease` on the database they address; a database
/// that nobody leases for `idleDatabaseSeconds` closes, and the next lease opens it again.
///
/// The default database is opened at start and never closes. Every other database opens on its
/// first lease, off the event loops (recovering a folder reads files), on the engine thread
/// with the fewest open databases, so that writes to different databases run on different cores.
final class DatabaseRegistry: Sendable {
    let layout: DatabaseLayout
    let settings: DatabaseSettings
    let defaultDatabase: HostedDatabase
    let defaultName: DatabaseName
    /// The threads the engines run on; the default database's is the first.
    let engineLoops: [any EventLoop]
    let context: HostedDatabase.Context
    /// Whether a request naming an unknown database creates it.
    let createsOnFirstUse: Bool
    /// A cluster member replicates its default database only (docs/cluster.md, "Databases").
    let clustered: Bool
    let state: NIOLockedValueBox<State>
    private let openingPool: NIOThreadPool
    private let idleTimer = NIOLockedValueBox<RepeatedTask?>(nil)

    struct State {
        /// The databases other than the default one whose folders exist.
        var known: Set<DatabaseName> = []
        var entries: [DatabaseName: Entry] = [:]
        /// Open databases per engine loop (the default database counts on loop 0).
        var load: [Int]
        var nextLeaseID: UInt64 = 1
        /// Connections that use the default database.
        var defaultConnections = 0
        var shutDown = false
    }

    /// A database other than the default one that is not simply closed.
    enum Entry {
        case opening(EventLoopFuture<Void>)
        case open(OpenDatabase)
        /// Being deleted, while the connections that use it close: their leases still end here.
        case draining(OpenDatabase, done: EventLoopFuture<Void>)
        /// Closing (idle or shutdown) or being deleted: leases wait for `done`, then look again.
        case closing(done: EventLoopFuture<Void>)
    }

    struct OpenDatabase {
        let database: HostedDatabase
        let loopIndex: Int
        var users = 0
        var connections = 0
        var lastUsed: Int64
        /// Closes each connection that uses the database (called when it is deleted).
        var evictions: [UInt64: @Sendable () -> Void] = [:]

        /// `lease` let go.
        mutating func end(_ lease: Lease, now: Int64) {
            users -= 1
            if lease.isConnection { connections -= 1 }
            evictions[lease.id] = nil
            if users == 0 { lastUsed = now }
        }
    }

    init(
        layout: DatabaseLayout, settings: DatabaseSettings, defaultDatabase: HostedDatabase,
        engineLoops: [any EventLoop], context: HostedDatabase.Context, createsOnFirstUse: Bool, clustered: Bool
    ) {
        self.layout = layout
        self.settings = settings
        self.defaultDatabase = defaultDatabase
        self.defaultName = defaultDatabase.name
        self.engineLoops = engineLoops
        self.context = context
        self.createsOnFirstUse = createsOnFirstUse
        self.clustered = clustered
        var state = State(load: Array(repeating: 0, count: engineLoops.count))
        state.load[0] = 1
        state.known = Set(layout.existingNames())
        self.state = NIOLockedValueBox(state)
        openingPool = NIOThreadPool(numberOfThreads: 2)
        openingPool.start()
    }

    /// Starts closing databases that nobody used for `idleDatabaseSeconds`, and emptying the trash.
    func startIdleTimer() {
        let idle = settings.idleCloseSeconds
        let period = idle == 0 ? 60 : max(1, min(30, idle / 4))
        let task = engineLoops[0].scheduleRepeatedTask(
            initialDelay: .seconds(Int64(period)), delay: .seconds(Int64(period))
        ) { [weak self] _ in
            guard let self else { return }
            if idle > 0 { self.closeIdle(olderThan: Int64(idle) * 1000) }
            self.layout.emptyTrash(olderThanHours: self.settings.trashRetentionHours, now: self.context.clock())
        }
        idleTimer.withLockedValue { $0 = task }
    }

    // MARK: Leases

    /// A connection's or request's use of one database: release it when done.
    struct Lease: Sendable {
        let database: HostedDatabase
        let id: UInt64
        let isConnection: Bool
        let registry: DatabaseRegistry?

        var engine: Engine { database.engine }

        /// Lets go of the database (once).
        func release() { registry?.release(self) }
    }

    /// Resolves `requested` (nil: the default database) to a lease on `loop`: the database is
    /// opened, or created when `autoCreateDatabases` allows, as needed. A connection's lease
    /// counts against the database's `maxConnections`, and `evict` closes the connection if the
    /// database is deleted.
    func lease(
        _ requested: String?, on loop: any EventLoop, connection: Bool = false,
        evict: (@Sendable () -> Void)? = nil
    ) -> EventLoopFuture<Lease> {
        guard let requested, requested != defaultName.text else {
            return loop.makeCompletedFuture(leaseDefault(connection: connection))
        }
        let name: DatabaseName
        do { name = try DatabaseName(requested) } catch { return loop.makeFailedFuture(error) }
        if clustered {
            return loop.makeFailedFuture(
                DatabaseError(
                    .unavailable,
                    "database \"\(name)\": a cluster serves only its default database \"\(defaultName)\" (docs/cluster.md, \"Databases\")"
                ))
        }
        return acquire(name, on: loop, connection: connection, evict: evict)
    }

    /// A lease decided without waiting: on the default database, or on one that is open; nil
    /// when the database must be opened (or created) first (`lease`).
    func leaseNow(
        _ requested: String?, connection: Bool, evict: (@Sendable () -> Void)? = nil
    ) -> Result<Lease, any Error>? {
        guard let requested, requested != defaultName.text else { return leaseDefault(connection: connection) }
        guard let name = try? DatabaseName(requested), !clustered else { return nil }
        return state.withLockedValue { state -> Result<Lease, any Error>? in
            grant(name, in: &state, connection: connection, evict: evict).map { $0.mapError { $0 } }
        }
    }

    /// A lease on `name` when it is open (a failure when a connection would pass its
    /// `maxConnections`); nil when it is not open. Under the state's lock.
    private func grant(
        _ name: DatabaseName, in state: inout State, connection: Bool, evict: (@Sendable () -> Void)?
    ) -> Result<Lease, DatabaseError>? {
        guard case .open(var open) = state.entries[name] else { return nil }
        if connection, let maxConnections = settings.settings(for: name.text).maxConnections,
            open.connections >= maxConnections
        {
            return .failure(Self.connectionsFull(name, maxConnections))
        }
        let id = state.nextLeaseID
        state.nextLeaseID += 1
        open.users += 1
        if connection { open.connections += 1 }
        if let evict { open.evictions[id] = evict }
        state.entries[name] = .open(open)
        return .success(Lease(database: open.database, id: id, isConnection: connection, registry: self))
    }

    static func connectionsFull(_ name: DatabaseName, _ maxConnections: Int) -> DatabaseError {
        DatabaseError(
            .overloaded, "database \"\(name)\" has its quota of \(maxConnections) connections (maxConnections)",
            retryAfterMs: 1000)
    }

    private func acquire(
        _ name: DatabaseName, on loop: any EventLoop, connection: Bool, evict: (@Sendable () -> Void)?
    ) -> EventLoopFuture<Lease> {
        enum Step {
            case leased(Lease)
            case wait(EventLoopFuture<Void>)
            case open(EventLoopPromise<Void>, loopIndex: Int)
            case refuse(DatabaseError)
        }
        let step: Step = state.withLockedValue { state in
            if state.shutDown { return .refuse(DatabaseError(.unavailable, "the server is shutting down")) }
            switch state.entries[name] {
            case .open:
                switch grant(name, in: &state, connection: connection, evict: evict) {
                case .success(let lease)?: return .leased(lease)
                case .failure(let error)?: return .refuse(error)
                case nil: return .refuse(DatabaseError(.internal, "database \"\(name)\" closed while leased"))
                }
            case .opening(let done), .closing(let done), .draining(_, let done):
                return .wait(done)
            case nil:
                if !state.known.contains(name) {
                    guard createsOnFirstUse else { return .refuse(Self.unknown(name)) }
                    if let refusal = roomForOneMore(state) { return .refuse(refusal) }
                    do throws(DatabaseError) {
                        _ = try layout.makeFolder(for: name)
                    } catch {
                        return .refuse(error)
                    }
                    state.known.insert(name)
                    // A Firebase SDK names its database in every request: a first one created here
                    // may be an app that expected the default database.
                    context.logger.notice(
                        "created a database on first use (autoCreateDatabases); requests that name no database go to \"\(defaultName)\": set defaultDatabase to \"\(name)\" if this is the app's one database",
                        metadata: ["db": "\(name)"])
                }
                let loopIndex = state.load.indices.min { state.load[$0] < state.load[$1] } ?? 0
                state.load[loopIndex] += 1
                let promise = engineLoops[loopIndex].makePromise(of: Void.self)
                state.entries[name] = .opening(promise.futureResult)
                return .open(promise, loopIndex: loopIndex)
            }
        }
        switch step {
        case .leased(let lease):
            return loop.makeSucceededFuture(lease)
        case .refuse(let error):
            return loop.makeFailedFuture(error)
        case .wait(let done):
            return done.hop(to: loop).flatMap { self.acquire(name, on: loop, connection: connection, evict: evict) }
        case .open(let promise, let loopIndex):
            open(name, loopIndex: loopIndex, promise: promise)
            return promise.futureResult.hop(to: loop).flatMap {
                self.acquire(name, on: loop, connection: connection, evict: evict)
            }
        }
    }

    /// Opens `name` on the opening pool and records it open (or forgets the attempt).
    private func open(_ name: DatabaseName, loopIndex: Int, promise: EventLoopPromise<Void>) {
        let loop = engineLoops[loopIndex]
        let context = self.context
        let directory = layout.directory(of: name)
        let opened = openingPool.runIfActive(eventLoop: loop) {
            let (rules, store) = try HostedDatabase.rules(for: name, directory: directory, context: context)
            let database = try HostedDatabase.open(
                name: name, directory: directory, loop: loop, context: context, rules: rules, rulesStore: store)
            try database.runOrphanedOnDisconnect().wait()
            return database
        }
        opened.whenComplete { result in
            self.state.withLockedValue { state in
                switch result {
                case .success(let database):
                    state.entries[name] = .open(
                        OpenDatabase(database: database, loopIndex: loopIndex, lastUsed: context.clock()))
                case .failure:
                    state.entries[name] = nil
                    state.load[loopIndex] -= 1
                }
            }
            switch result {
            case .success: promise.succeed()
            case .failure(let error):
                context.logger.error("could not open a database", metadata: ["db": "\(name)", "error": "\(error)"])
                promise.fail(error)
            }
        }
    }

    /// The triggers of database `name` when it is open (the default one always is);
    /// `.notFound` when it does not exist, `.unavailable` when it is closed (a connection to it
    /// opens it).
    func triggerControl(for name: DatabaseName) throws(DatabaseError) -> any TriggerControl {
        if name == defaultName { return defaultDatabase.triggers }
        let entry = state.withLockedValue { $0.entries[name] }
        switch entry {
        case .open(let open)?: return open.database.triggers
        case nil: throw Self.unknown(name)
        default: throw DatabaseError(.unavailable, "database \"\(name)\" is not open: connect to it first")
        }
    }

    /// A lease on the default database, which is always open.
    func leaseDefault(connection: Bool) -> Result<Lease, any Error> {
        let maxConnections = settings.settings(for: defaultName.text).maxConnections
        return state.withLockedValue { state in
            if connection {
                if let maxConnections, state.defaultConnections >= maxConnections {
                    return .failure(Self.connectionsFull(defaultName, maxConnections))
                }
                state.defaultConnections += 1
            }
            return .success(Lease(database: defaultDatabase, id: 0, isConnection: connection, registry: self))
        }
    }

    private func release(_ lease: Lease) {
        state.withLockedValue { state in
            if lease.database === defaultDatabase {
                if lease.isConnection { state.defaultConnections -= 1 }
                return
            }
            let name = lease.database.name
            switch state.entries[name] {
            case .open(var open) where open.database === lease.database:
                open.end(lease, now: context.clock())
                state.entries[name] = .open(open)
            case .draining(var open, let done) where open.database === lease.database:
                open.end(lease, now: context.clock())
                state.entries[name] = .draining(open, done: done)
            default:
                break
            }
        }
    }

    /// Why one more database may not be made (nil: it may).
    func roomForOneMore(_ state: State) -> DatabaseError? {
        guard state.known.count + 1 >= settings.maxDatabases else { return nil }
        return DatabaseError(
            .overloaded, "the server holds its maximum of \(settings.maxDatabases) databases (maxDatabases)")
    }

    static func unknown(_ name: DatabaseName) -> DatabaseError {
        DatabaseError(
            .notFound,
            "no database named \"\(name)\": an admin creates it (hearth db create \(name)), or the server creates databases on first use with autoCreateDatabases"
        )
    }

    // MARK: Closing

    /// Closes the open databases nobody used for `age` ms.
    func closeIdle(olderThan age: Int64) {
        let now = context.clock()
        let idle: [(DatabaseName, OpenDatabase, EventLoopPromise<Void>)] = state.withLockedValue { state in
            var idle: [(DatabaseName, OpenDatabase, EventLoopPromise<Void>)] = []
            for (name, entry) in state.entries {
                guard case .open(let open) = entry, open.users == 0, now - open.lastUsed >= age,
                    !open.database.triggers.hasUndelivered
                else { continue }
                let promise = engineLoops[open.loopIndex].makePromise(of: Void.self)
                state.entries[name] = .closing(done: promise.futureResult)
                idle.append((name, open, promise))
            }
            return idle
        }
        for (name, open, promise) in idle {
            context.logger.info("closing an idle database", metadata: ["db": "\(name)"])
            promise.completeWithTask {
                await open.database.close()
                self.forget(name, loopIndex: open.loopIndex)
            }
        }
    }

    /// Records that `name` is closed.
    func forget(_ name: DatabaseName, loopIndex: Int) {
        state.withLockedValue { state in
            state.entries[name] = nil
            state.load[loopIndex] -= 1
        }
    }

    /// Closes every database but the default one (shutdown); later leases are refused.
    func closeAll() async {
        let open: [(DatabaseName, OpenDatabase)] = state.withLockedValue { state in
            state.shutDown = true
            return state.entries.compactMap { name, entry in
                if case .open(let open) = entry { return (name, open) }
                return nil
            }
        }
        for (name, database) in open {
            await database.database.close()
            forget(name, loopIndex: database.loopIndex)
        }
        idleTimer.withLockedValue { $0?.cancel() }
        try? await openingPool.shutdownGracefully()
    }

    /// How many databases there are besides the default one.
    var otherCount: Int { state.withLockedValue { $0.known.count } }

    /// The open databases, the default one first.
    var openDatabases: [HostedDatabase] {
        let others: [HostedDatabase] = state.withLockedValue { state in
            state.entries.values.compactMap { entry in
                if case .open(let open) = entry { return open.database }
                return nil
            }
        }
        return [defaultDatabase] + others.sorted { $0.name < $1.name }
    }

    /// The metrics of the open databases other than the default one, by name.
    @Sendable func otherMetrics() -> [(name: String, metrics: ServerMetrics)] {
        openDatabases.dropFirst().map { ($0.name.text, $0.engine.metrics) }
    }
}
