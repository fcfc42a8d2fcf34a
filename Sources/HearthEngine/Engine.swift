import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// What the engine sends back to a connection, in order: responses to its requests (encoded on
/// the connection's thread) and events (a body encoded once and shared by all subscribers of a
/// view, behind each subscriber's own `{"sub":S,` prefix).
///
/// A response is boxed (`indirect`): the enum is then the size of an event, which every
/// subscriber's queue copies once per write, rather than of the largest response.
package enum Outbound: Sendable {
    indirect case response(RequestID, ResponseBody)
    case event(sub: Int, body: ByteBuffer)
    /// The server ended subscription `sub` (its read is no longer allowed).
    case cancelled(sub: Int, DatabaseError)
    /// The connection's identity ended (e.g. its token expired); it is unauthenticated now.
    case authRevoked(reason: String)
    /// A complete line sent as it is (replication records, `cluster` events).
    case line([UInt8])
    /// Lines computed on the connection's own thread, in order with the rest (a snapshot for a
    /// replica: encoding it does not hold up the engine).
    case computed(@Sendable () -> [[UInt8]])
    /// Close the connection once what came before is written (a replica of a leader stepping
    /// down).
    case close
}

/// How the engine reaches a connection: its id and a function that hands a batch of output to
/// the connection's own event loop.
package struct SessionLink: Sendable {
    package let id: UInt64
    /// The connection's event loop: `receive` may only be called on it.
    package let loop: any EventLoop
    package let receive: @Sendable ([Outbound]) -> Void

    package init(id: UInt64, loop: any EventLoop, receive: @escaping @Sendable ([Outbound]) -> Void) {
        self.id = id
        self.loop = loop
        self.receive = receive
    }
}

/// Work handed to the engine.
package enum Submission: Sendable {
    /// A request from a connection.
    case request(SessionLink, Request)
    /// Requests from one connection, in order. A run of them carries its connection's link once:
    /// a link per request made the connection's thread and the engine's count references on the
    /// same two objects (its event loop and its delivery closure) for every request. A single
    /// request goes as `request`, without an array.
    case requests(SessionLink, [Request])
    case disconnected(sessionID: UInt64)
    /// Completes when everything submitted before it has been applied and delivered.
    case barrier(EventLoopPromise<Void>)
    /// A connection's identity reached its expiry (`generation` tells whether it is still the
    /// identity in force).
    case identityExpired(sessionID: UInt64, generation: UInt64)
    /// New rules from outside the protocol (SIGHUP): take effect between two turns.
    case replaceRules(RuleSet, EventLoopPromise<Void>)
    /// Replication and election (Cluster/).
    case cluster(ClusterInput)

    /// How many requests (or replicated records) a connection hands the engine at once while it
    /// is still reading a burst. The engine starts on the head of a pipelined burst while the
    /// connection's event loop decodes the rest, rather than waiting for the whole read, so the
    /// two threads work at once. Smaller reads still go over in one submission, when the read
    /// ends.
    package static let burstSlice = 64

    /// The requests this stands for (1 for anything that is not requests), as the metrics count them.
    var weight: Int {
        if case .requests(_, let requests) = self { return requests.count }
        return 1
    }
}

/// The single writer: owns the database and every connection's engine-side state, and applies
/// all submissions in one total order on its own thread.
///
/// Submissions are queued under a lock from any thread; the engine drains the whole queue in
/// one turn (a batch), appends the batch's writes to the log with one write (and, under
/// `fsync: always`, one fsync), and only then hands each connection its outputs in one
/// delivery. A pipelining client therefore gets many requests per engine turn and per fsync.
/// A read that follows writes in the same turn first commits them, so no read ever shows data
/// the log does not have.
package final class Engine: @unchecked Sendable {
    // Everything below `inbox` is confined to `loop`.
    package let loop: any EventLoop
    private let inbox = NIOLockedValueBox(Inbox())
    // The state every write touches is `@exclusivity(unchecked)`: only the engine's thread
    // touches it, and no access to it calls code that could reach it again, so the runtime's
    // dynamic exclusivity check (two runtime calls per access, with the connections' and the
    // view registry's about 8 % of a pipelined write's instructions) is left out. The compiler's
    // static checks still apply.
    @exclusivity(unchecked) package var database: Database
    var onDisconnect: [UInt64: OnDisconnectQueue] = [:]
    /// The id the next onDisconnect registration takes (unique for the life of the data
    /// directory: it continues from the log's).
    var nextRegistrationID: UInt64
    var pushIDs = PushIDGenerator()
    let views = ViewRegistry()
    /// The access rules in force; nil is open mode (docs/security.md, "Modes").
    var rules: RuleSet?
    /// The `.indexOn` declarations (of `rules`, or of an index-only setup in open mode).
    var indexRules: IndexRules
    /// Where `setRules` keeps the rules before they take effect (the data directory).
    let rulesStore: any RulesKeeper
    /// Identity, read grants and link of each connection that has sent a request.
    @exclusivity(unchecked) var sessions: [UInt64: SessionState] = [:]
    /// Subscriptions whose read rules look at data: re-checked after every write.
    @exclusivity(unchecked) var dataDependentGrants: Set<SubscriptionID> = []
    /// The open flag, the denial counters and the notice log, shared with the transports.
    let access: AccessState
    /// How many subscriptions one connection may hold (`maxSubscriptionsPerConnection`).
    let maxSubscriptionsPerConnection: Int
    private let strictIndexes: Bool
    /// Undeclared indexes already warned about, as location and order (one log line each).
    private var warnedIndexes: Set<[String]> = []
    let allocator = ByteBufferAllocator()
    /// The write-ahead log; nil keeps the data in memory only.
    package let storage: Storage?
    /// Set when the log failed: writes are refused with `unavailable` until a restart.
    private(set) var storageFailure: StorageError?
    package let logger: Logger
    let clock: @Sendable () -> Int64
    /// Counts and timings for the metrics and stats endpoints (Observability/).
    package let metrics: ServerMetrics
    /// This turn's counts, handed to `metrics` at its end.
    @exclusivity(unchecked) var tally = EngineTally()
    /// The outcomes of committed writes that carried a write id (`WriteIDWindow`).
    @exclusivity(unchecked) var writeIDs: WriteIDWindow
    /// The last revisions' replaced nodes, for subscriptions that resume (`ChangeLog`).
    @exclusivity(unchecked) var changeLog: ChangeLog
    /// Replication state (Cluster/); inert on a standalone server.
    @exclusivity(unchecked) package var replication = ReplicationState()
    /// The confirmed revision and the outputs waiting for it (Cluster/; any thread).
    package let confirmations = ConfirmationGate()
    /// A replica's acknowledgements waiting for a deferred fsync (Cluster/; any thread).
    let deferredAcks = DeferredAcks()
    /// The batches written to the log whose deferred fsync has not finished, oldest first
    /// (Engine+Durability).
    @exclusivity(unchecked) var undurable: [UndurableBatch] = []
    /// The last turn's batch size, reserved for the next turn's (`Batch.Size`).
    @exclusivity(unchecked) private var lastBatchSize = Batch.Size()
    /// The recent records a leader streams to replicas that reconnect (each record is appended
    /// on its own: one access each).
    @exclusivity(unchecked) var retained: RetainedLog
    /// The cluster node this engine belongs to; nil standalone. Set before the first request.
    package var clusterHooks: (any ClusterHooks)?
    /// The `cluster` object connections put in `hello` (any thread); nil standalone.
    private let publishedCluster = NIOLockedValueBox<JSONValue?>(nil)
    /// Whether this node leads its cluster, as of its last role change (any thread). A leader's
    /// connections do not keep a request's text for forwarding (`Request.source`): copying each
    /// line cost a leader an allocation per request on its I/O thread and a free on this one.
    /// A request decoded just before a leader steps down then cannot be forwarded and is
    /// answered `unavailable` "not the leader", which clients send again (with its write id).
    private let leads = Atomic<Bool>(false)
    /// Whether replicas' acknowledgements were recorded since the last turn took them, and
    /// whether a check for them is scheduled (`acknowledgementArrived`). Any thread.
    let acknowledgementsUnseen = Atomic<Bool>(false)
    let acknowledgementCheckScheduled = Atomic<Bool>(false)

    /// Whether this node leads its cluster (see `leads`). Any thread.
    package var isLeading: Bool { leads.load(ordering: .relaxed) }

    /// Records whether this node leads (engine thread, on each role change).
    func setLeads(_ value: Bool) { leads.store(value, ordering: .relaxed) }

    /// The `cluster` object of `hello`, as of the last change. Any thread.
    package func clusterObject() -> JSONValue? { publishedCluster.withLockedValue { $0 } }

    /// Updates the `cluster` object of `hello`. Engine thread.
    func publishClusterObject(_ object: JSONValue?) { publishedCluster.withLockedValue { $0 = object } }

    private struct Inbox {
        /// Each caller's submissions as it handed them over: its array is kept, not copied
        /// element by element into one (a retain of each submission's parts, and a release
        /// when the caller's array lets go).
        var batches: [[Submission]] = []
        var scheduled = false
    }

    package init(
        loop: any EventLoop, database: Database, storage: Storage?, rules: RuleSet?, indexRules: IndexRules,
        rulesStore: any RulesKeeper, access: AccessState, maxSubscriptionsPerConnection: Int, strictIndexes: Bool, logger: Logger,
        clock: @escaping @Sendable () -> Int64, metrics: ServerMetrics,
        writeIDs: WriteIDWindow = WriteIDWindow(capacity: 1000, retentionSeconds: 3600),
        changeLogRevisions: Int = 10_000
    ) {
        self.loop = loop
        self.database = database
        self.storage = storage
        self.nextRegistrationID = storage?.onDisconnect.nextID ?? 1
        self.rules = rules
        self.indexRules = rules?.indexRules ?? indexRules
        self.rulesStore = rulesStore
        self.access = access
        self.maxSubscriptionsPerConnection = maxSubscriptionsPerConnection
        self.strictIndexes = strictIndexes
        self.logger = logger
        self.clock = clock
        self.metrics = metrics
        self.writeIDs = writeIDs
        self.changeLog = ChangeLog(capacity: changeLogRevisions)
        self.retained = RetainedLog(capacity: changeLogRevisions)
        self.retained.reset(at: database.rev)
        observeDeferredSyncs()
    }

    /// Queues work; safe from any thread. Order is kept per caller.
    package func submit(_ items: [Submission]) {
        guard !items.isEmpty else { return }
        enqueue { $0.append(items) }
    }

    package func submit(_ item: Submission) { submit([item]) }

    /// Queues several callers' work at once (`SubmissionGatherer`); order is kept per caller.
    func submit(gathered: [[Submission]]) {
        enqueue { $0.append(contentsOf: gathered) }
    }

    /// Adds to the inbox under its lock, and schedules a drain unless one is scheduled.
    private func enqueue(_ add: (inout [[Submission]]) -> Void) {
        let schedule = inbox.withLockedValue { inbox -> Bool in
            add(&inbox.batches)
            if inbox.scheduled { return false }
            inbox.scheduled = true
            return true
        }
        if schedule { loop.execute { self.drain() } }
    }

    /// Whether submissions wait for the next turn. Any thread.
    var hasQueuedWork: Bool { inbox.withLockedValue { !$0.batches.isEmpty } }

    /// Resolves once everything submitted so far has been applied and handed to connections.
    package func barrier() -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        submit(.barrier(promise))
        return promise.futureResult
    }

    /// The whole tree and its revision, as of the next engine turn.
    package func snapshot() -> EventLoopFuture<(Node, UInt64)> {
        loop.submit {
            self.waitUntilDurable()
            return (self.database.root, self.database.rev)
        }
    }

    // MARK: Engine thread

    private func drain() {
        loop.preconditionInEventLoop()
        let batches = inbox.withLockedValue { inbox -> [[Submission]] in
            let batches = inbox.batches
            inbox.batches = []
            inbox.scheduled = false
            return batches
        }
        if !undurable.isEmpty { settleUndurable() }
        let now = clock()
        let turn = startTurn()
        var batch = Batch(rev: database.rev, expected: lastBatchSize)
        replication.turnLeadershipProof = nil
        if replication.isClustered {
            takeAcknowledgements(now: now, batch: &batch)
            logAhead(batches)
        }
        let slice = streamSlice
        for items in batches {
            for item in items { take(item, now: now, slice: slice, batch: &batch) }
        }
        commit(&batch)
        lastBatchSize = batch.size
        if replication.heartbeatDue { sendDueHeartbeat(now: now, batch: &batch) }
        if replication.confirmationUnsent {
            confirmSoon(inboxIsEmpty: !hasQueuedWork)
        }
        // Counted before anything is delivered: a client that saw an answer sees it in the metrics.
        let submissions = batches.reduce(0) { total, items in items.reduce(total) { $0 + $1.weight } }
        finishTurn(turn, batch: batch, submissions: submissions, storage: storage)
        deliverOrHold(batch.outputs)
        if !batch.barriers.isEmpty {
            waitUntilDurable()
            for promise in batch.barriers { promise.succeed() }
        }
        if let storage, storageFailure == nil, storage.wantsCompaction, !storage.isCompacting {
            // The window as of this revision (an O(1) copy), encoded on the compaction queue.
            let window = writeIDs
            storage.compact(root: database.root, rev: database.rev) { window.log() }
        }
        release(batches, submissions: submissions)
    }

    /// Lets go of a long turn's submissions on the event loop of the connection that sent the
    /// first of them rather than here: freeing their requests (which that loop allocated) cost
    /// the engine's thread, the bound of a pipelined connection, about 800 instructions a write
    /// (callgrind). A short turn's go here, where a task would cost more than it saves.
    private func release(_ batches: consuming [[Submission]], submissions: Int) {
        guard submissions >= Self.releasedElsewhereFrom else { return }
        switch batches.first?.first {
        case .requests(let session, _)?, .request(let session, _)?:
            session.loop.execute { [batches] in _ = batches }
        default:
            return
        }
    }

    /// A turn of at least this many submissions is freed off the engine's thread (`release`): a
    /// slice of a pipelined burst (`Submission.burstSlice`) and more.
    static let releasedElsewhereFrom = Submission.burstSlice

    /// Applies one request of `session` in the turn's batch.
    private func take(_ request: Request, from session: SessionLink, now: Int64, batch: inout Batch) {
        let operation = request.operation
        if operation.readsData, batch.hasUncommittedWrites { commit(&batch) }
        if replication.isClustered || operation.isCluster {
            route(request, operation: operation, session: session, now: now, batch: &batch)
        } else {
            handle(request, operation: operation, session: session, now: now, batch: &batch)
        }
    }

    /// Applies one submission in the turn's batch, committing whenever `slice` records wait (after
    /// each request of a run).
    private func take(_ item: Submission, now: Int64, slice: Int, batch: inout Batch) {
        switch item {
        case .request(let session, let request):
            take(request, from: session, now: now, batch: &batch)
        case .requests(let session, let requests):
            for request in requests {
                take(request, from: session, now: now, batch: &batch)
                if batch.logged.count >= slice { commit(&batch) }
            }
        case .disconnected(let sessionID):
            views.removeSession(sessionID)
            if replication.isClustered { clusterSessionEnded(sessionID) }
            forgetSession(sessionID)
            runOnDisconnect(sessionID, now: now, batch: &batch)
        case .barrier(let promise):
            batch.barriers.append(promise)
        case .identityExpired(let sessionID, let generation):
            expireIdentity(sessionID, generation: generation, now: now, batch: &batch)
        case .replaceRules(let ruleSet, let promise):
            install(ruleSet, now: now, batch: &batch)
            promise.succeed()
        case .cluster(let input):
            handleCluster(input, now: now, batch: &batch)
        }
        if batch.logged.count >= slice { commit(&batch) }
    }

    /// Hands each connection its outputs, with one task per event loop rather than one per
    /// connection: with many connections per loop this saves most cross-thread wakeups.
    func deliver(_ outputs: some Collection<(session: SessionLink, items: [Outbound])>) {
        Self.deliver(outputs)
    }

    /// `deliver(_:)`, from any thread.
    static func deliver(_ outputs: some Collection<(session: SessionLink, items: [Outbound])>) {
        // A few event loops (one per core): a list searched in place beats a dictionary.
        var byLoop: [(loop: any EventLoop, work: [(SessionLink, [Outbound])])] = []
        for (session, items) in outputs {
            if let i = byLoop.firstIndex(where: { $0.loop === session.loop }) {
                byLoop[i].work.append((session, items))
            } else {
                byLoop.append((session.loop, [(session, items)]))
            }
        }
        for (loop, work) in byLoop {
            loop.execute {
                for (session, items) in work { session.receive(items) }
            }
        }
    }

    /// Makes the batch's writes and onDisconnect changes durable (per the fsync policy) before
    /// anything they produced leaves; if the log fails, undoes the writes and refuses writes and
    /// registrations from now on. (The onDisconnect queues are not undone: after a failure no
    /// queue runs or changes again in this process, and the log keeps what it had.)
    ///
    /// In a cluster each record is encoded once, for the log and the replication stream; a
    /// leader under `syncReplicas ≥ 1` sends the records to its replicas between its log's write
    /// and its fsync, so that both flush at once (docs/cluster.md, "Replication stream").
    func commit(_ batch: inout Batch) {
        guard batch.hasUncommittedRecords else { return }
        defer { tally.acknowledgementsSettled() }
        guard let storage else {
            batch.committed(rev: database.rev)
            writeIDs.settle()
            if replication.isClustered { replicationCommitted(batch.encodedRecords(), now: clock(), batch: &batch) }
            return
        }
        if isFenced {
            // Fenced (docs/cluster.md, "Election and fencing"): nothing of this batch is logged or acknowledged.
            rollBack(&batch, answering: DatabaseError(.unavailable, "not the leader: its lease could not be confirmed"))
            return
        }
        var streamed: StreamedEarly?
        var records: [EncodedRecord] = []
        let deferring = defersFsync
        do {
            if replication.isClustered {
                // Each payload encoded once, into the log's buffer, which the stream and the
                // retained log then slice.
                records = try storage.appendEncoding(
                    batch.logged, received: { batch.receivedPayload($0) }, deferringSync: deferring,
                    beforeSync: { encoded in streamed = streamBeforeSync(encoded, batch: batch) })
            } else {
                try storage.append(batch.logged, deferringSync: deferring)
            }
            if isFenced {
                // The proof ran out during the append (a stalled disk, a paused process): the
                // batch stays in this node's log only, to be moved aside when it rejoins.
                replication.fencedUntilRoleChange = true  // the log is now ahead of memory
                if streamed != nil { endStreams(batch: &batch) }
                rollBack(
                    &batch,
                    answering:
                        DatabaseError(
                            .unavailable,
                            "outcome unknown: the leader's lease could not be confirmed after logging the write"))
                return
            }
            committed(&batch, durableLater: deferring)
            if !records.isEmpty { replicationCommitted(records, streamed: streamed, now: clock(), batch: &batch) }
        } catch {
            storageFailed(error)
            if streamed != nil { endStreams(batch: &batch) }
            rollBack(&batch, answering: unavailable)
            // An earlier batch's deferred fsync may have failed too: undo what it did not keep.
            settleUndurable()
        }
    }

    /// Undoes the batch's uncommitted writes in memory and answers them with `error` (their events
    /// are dropped): the log failed, or a leader could not prove its lease.
    func rollBack(_ batch: inout Batch, answering error: DatabaseError) {
        undo([batch.undo])
        batch.rolledBack(error)
        tally.acknowledgementsRefused()
    }

    /// Puts the tree back as of the first undo log's start, undoing the logs newest first, and
    /// with it the write ids, the change log and the views.
    func undo(_ logs: [UndoLog]) {
        guard let oldest = logs.first else { return }
        let refusedRoot = database.root
        var root = refusedRoot
        for log in logs.reversed() { root = log.undone(root) }
        database.restore(root: root, rev: oldest.rev)
        writeIDs.forget(after: database.rev)
        changeLog.drop(after: database.rev)
        views.resync(from: refusedRoot, to: database.root, rev: database.rev)
    }

    private var unavailable: DatabaseError {
        DatabaseError(
            .unavailable,
            "storage failed (\(storageFailure?.message ?? "unknown error")); the write was not applied; writes are refused until the server restarts"
        )
    }

    func storageFailed(_ error: StorageError) {
        guard storageFailure == nil else { return }
        storageFailure = error
        metrics.storageFailed(reason: error.message)
        logger.critical(
            "STORAGE FAILED: refusing all writes until restart; reads continue",
            metadata: ["error": "\(error.message)"])
    }

    /// Under `fsync: everysec`: fsyncs the log when due (called once a second).
    package func syncIfDue() {
        loop.preconditionInEventLoop()
        guard let storage, storageFailure == nil else { return }
        do { try storage.syncIfDue() } catch { storageFailed(error) }
    }

    /// Flushes and closes the log (graceful shutdown, after the last batch).
    package func closeStorage() {
        loop.preconditionInEventLoop()
        do { try storage?.close() } catch {
            logger.error("closing the log failed", metadata: ["error": "\(error.message)"])
        }
    }

    func handle(_ request: Request, session: SessionLink, now: Int64, batch: inout Batch) {
        handle(request, operation: request.operation, session: session, now: now, batch: &batch)
    }

    /// `handle` with the request's operation already copied out of its box (once per turn).
    func handle(
        _ request: Request, operation: Operation, session: SessionLink, now: Int64, batch: inout Batch
    ) {
        let op = OperationLabel(operation)
        tally.request(op)
        func respond(_ body: ResponseBody) {
            if case .failure(let error) = body { tally.error(op, error.code) }
            batch.append(.response(request.id, body), for: session)
        }
        func acknowledge(_ body: ResponseBody) {
            tally.acknowledged(op)
            batch.appendProvisional(.response(request.id, body), for: session)
        }
        if operation.writesData || operation.changesOnDisconnect, storageFailure != nil {
            respond(.failure(unavailable))
            return
        }
        if let id = request.writeID, let answer = rememberedAnswer(for: id, now: now) {
            // Not applied again; a duplicate's answer waits, like the write's, for the log.
            if case .failure = answer { respond(answer) } else { acknowledge(answer) }
            return
        }
        let identity = sessions[session.id]?.identity
        switch operation {
        case .get(let path, let options):
            if let denial = readDenial("get", at: path, query: options.ruleQuery, identity: identity, now: now) {
                respond(.failure(denial))
                return
            }
            guard let query = options.query else {
                respond(.value(database.root.child(at: path), rev: database.rev, options: options))
                return
            }
            let queryStarted = ContinuousClock.now
            switch indexCheck(query.order, at: path) {
            case .failure(let error):
                respond(.failure(error))
            case .success(let warning):
                let location = database.root.child(at: path)
                let result: QueryResult
                if query.isUnfiltered, location.isLeaf {
                    result = .node(location)
                } else {
                    // A declared index is built on first use and maintained from then on.
                    if isDeclaredIndex(query.order, at: path), views.index(for: query.order, at: path) == nil {
                        views.declareIndex(query.order, at: path, data: database.root)
                    }
                    let index = views.index(for: query.order, at: path)
                    result = .children(
                        QueryEvaluator.window(query, of: location, index: index),
                        priority: query.isUnfiltered ? location.priority : nil)
                }
                respond(.window(result, rev: database.rev, options: options, warning: warning))
                metrics.queryStats.queryFinished(query, at: path, duration: .now - queryStarted)
            }
        case .write(let write, let kind):
            let tag = request.writeID.map {
                WriteTag(id: $0, kind: kind == .transaction ? .transaction : .write, at: now)
            }
            switch applyChecked(
                write, operation: kind.operationName, at: write.requestPath(kind), identity: identity, now: now,
                tag: tag, batch: &batch)
            {
            case .committed(let rev):
                if request.answerWithStoredValue {
                    acknowledge(
                        .stored(database.root.child(at: write.requestPath(kind).withoutPriority), key: nil, rev: rev))
                } else {
                    acknowledge(kind == .transaction ? .transactionCommitted(rev: rev) : .committed(rev: rev))
                }
            case .denied(let denial):
                respond(.failure(denial))
            case .stale(let current):
                if case .transaction(let path, _, _, _) = write,
                    let denial = staleTransactionDenial(write, at: path, identity: identity, now: now)
                {
                    respond(.failure(denial))
                    return
                }
                respond(.stale(current: current))
            }
        case .push(let path, let value):
            let key = pushIDs.next(now: now)
            let write = Write.set(path: path.appending(Key(key)), value: value)
            let tag = request.writeID.map { WriteTag(id: $0, kind: .push, at: now) }
            switch applyChecked(
                write, operation: "push", at: path, identity: identity, now: now, tag: tag, batch: &batch)
            {
            case .committed(let rev):
                acknowledge(
                    request.answerWithStoredValue
                        ? .stored(database.root.child(at: write.requestPath(.set)), key: key, rev: rev)
                        : .pushed(key: key, rev: rev))
            case .denied(let denial): respond(.failure(denial))
            case .stale: respond(.failure(DatabaseError(.internal, "push did not commit")))
            }
        case .subscribe(let path, let query, let events, let ruleQuery, let cache):
            subscribe(
                session, path: path, query: query, delivery: .events(events, cache: cache != nil),
                since: cache?.since, ruleQuery: ruleQuery, identity: identity, now: now, id: request.id,
                batch: &batch)
        case .stream(let path, let query, let format, let ruleQuery):
            subscribe(
                session, path: path, query: query ?? .default,
                delivery: .stream(.init(format: format, shapedByWrite: query == nil)), ruleQuery: ruleQuery,
                identity: identity, now: now, id: request.id, batch: &batch)
        case .unsubscribe(let sub):
            if views.unsubscribe(session: session.id, sub: sub) {
                revokeGrant(sub, of: session.id)
                respond(.done)
            } else {
                respond(.failure(DatabaseError(.notFound, "this connection has no subscription \(sub)")))
            }
        case .onDisconnect(let action):
            if let denial = onDisconnectDenial(action, identity: identity, now: now) {
                respond(.failure(denial))
                return
            }
            let change = register(
                action, session: session.id, identity: identity, connection: registeringConnection(session.id))
            if change.isEmpty {
                respond(.done)
            } else {
                // Acknowledged once the log has it, like a write.
                batch.record(change)
                acknowledge(.done)
            }
        case .ping:
            respond(.pong(serverTime: now))
        case .auth(let step):
            respond(changeIdentity(step, of: session, now: now, batch: &batch))
        case .setRules(let ruleSet):
            respond(setRules(ruleSet, identity: identity, now: now, batch: &batch))
        case .getRules:
            guard identity?.isAdmin == true || rules == nil else {
                respond(.failure(adminOnly("getRules")))
                return
            }
            respond(.rules(rules?.document ?? .null))
        case .simulate(let simulated, let operation):
            // In open mode anyone may ask (the answer is that everything is allowed).
            guard identity?.isAdmin == true || rules == nil else {
                respond(.failure(adminOnly("simulate")))
                return
            }
            respond(.simulated(simulate(operation, as: simulated, now: now)))
        case .cluster(let op):
            handleClusterRequest(op, request: request, session: session, now: now, batch: &batch)
        }
    }

    /// Adds a subscription (line protocol) or an event stream (HTTP) when the rules allow the
    /// read and the connection's limit has room, answers `subscribed` and sends its first events
    /// (in cache mode resuming from `since` when the change log allows).
    private func subscribe(
        _ session: SessionLink, path: Path, query: QuerySpec, delivery: ViewRegistry.Delivery, since: UInt64? = nil,
        ruleQuery: RuleQuery?, identity: AuthContext?, now: Int64, id: RequestID, batch: inout Batch
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
                respond(.subscribed(sub: sub, rev: database.rev, warning: warning))
                let location = database.root.child(at: path)
                let first =
                    shape.shapedByWrite
                    ? StreamEvents.initial(location, format: shape.format)
                    : StreamEvents.initial(view, location: location, format: shape.format)
                batch.append(.event(sub: sub, body: allocator.buffer(bytes: first)), for: session)
            }
        }
    }

    /// Whether the rules declare an index for `order` at `path` (kept for good once built).
    /// Key order needs no index; priority indexes live while subscriptions use them.
    private func isDeclaredIndex(_ order: QueryOrder, at path: Path) -> Bool {
        switch order {
        case .key, .priority: return false
        case .value, .child: return indexRules.isDeclared(order, at: path)
        }
    }

    /// Whether a query ordered by `order` at `path` may run: declared indexes pass; others pass
    /// with a warning (logged once per location and order), or fail under `strictIndexes`.
    private func indexCheck(_ order: QueryOrder, at path: Path) -> Result<String?, DatabaseError> {
        if indexRules.isDeclared(order, at: path) { return .success(nil) }
        let name: String
        switch order {
        case .value: name = ".value"
        case .child(let child): name = child.segments.map(\.string).joined(separator: "/")
        case .key, .priority: return .success(nil)
        }
        let advice = "add \".indexOn\": \"\(name)\" at \(path) to the rules"
        metrics.queryStats.unindexedQuery(order, at: path, refused: strictIndexes)
        if strictIndexes {
            return .failure(DatabaseError(.indexNotDefined, "no index for this query: \(advice)"))
        }
        if warnedIndexes.insert(["\(path)", name]).inserted {
            logger.warning("query on an undeclared index", metadata: ["path": "\(path)", "orderBy": "\(name)"])
        }
        return .success("index_not_defined: \(advice)")
    }

    func runOnDisconnect(_ sessionID: UInt64, now: Int64, batch: inout Batch) {
        guard let queue = onDisconnect.removeValue(forKey: sessionID) else { return }
        // Only a node that applies writes runs a queue; a replica's leader runs its clients'.
        guard replication.role.appliesWrites else { return }
        guard storageFailure == nil else {
            logger.error(
                "onDisconnect operations not run: storage failed; the log keeps them and they run when the server restarts",
                metadata: ["connection": "\(sessionID)"])
            return
        }
        run(queue, connection: sessionID, now: now, batch: &batch)
    }

    /// Brings subscriptions up to date with a committed write: first the ones whose read rules
    /// no longer allow them are cancelled, so that they never see the data that revoked them;
    /// then the views raise their events. The batch keeps `before` to undo the write.
    func afterWrite(_ write: Write, before: Node, rev: UInt64, now: Int64, batch: inout Batch) {
        let paths = write.paths
        batch.undo.wrote(over: before)
        changeLog.record(
            rev: rev, paths: paths, before: before, after: database.root, setsNonEmptyValue: write.setsNonEmptyValue)
        recheckDataDependentGrants(now: now, batch: &batch)
        views.apply(write: write, paths: paths, before: before, after: database.root, rev: rev, batch: &batch)
    }

    /// The path and value of `write` when it can be applied in place
    /// (`Database.applyInPlace(settingNonEmpty:at:now:)`), nil when something needs the whole
    /// old tree: a write that may empty or reshape an ancestor (the change log compares old and
    /// new), or one that a view or index watches (its events compare them). The caller checks
    /// that no rules apply (they compare them too). Without a reference to the old tree, the
    /// nodes of the written path that no snapshot shares (a reader's capture, a compaction's)
    /// change in place, which is what makes a burst of writes to the same places allocate once
    /// rather than once per write.
    func inPlaceSet(_ write: Write) -> (path: Path, value: PreparedValue)? {
        guard let set = write.nonEmptySet, !views.watches(CollectionOfOne(set.path)) else { return nil }
        return set
    }

    /// `afterWrite` for a write applied in place (`inPlaceSet`): no view watches it, and the
    /// change log and the batch keep its undo points.
    func afterWrite(rev: UInt64, kept: [(path: Path, before: Node)], now: Int64, batch: inout Batch) {
        batch.undo.wrote(replacing: kept)
        changeLog.record(rev: rev, kept: kept)
        recheckDataDependentGrants(now: now, batch: &batch)
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

    /// Whether the operation changes the connection's onDisconnect queue (which the log keeps).
    var changesOnDisconnect: Bool {
        if case .onDisconnect = self { return true }
        return false
    }
}

extension WriteKind {
    /// The op's name, for `permission_denied` messages.
    var operationName: String {
        switch self {
        case .set: return "set"
        case .update: return "update"
        case .remove: return "remove"
        case .setPriority: return "setPriority"
        case .transaction: return "transaction"
        }
    }
}

extension Write {
    /// The path the request named (for `setPriority`, the node whose priority it sets).
    func requestPath(_ kind: WriteKind) -> Path {
        switch self {
        case .set(let path, _): return kind == .setPriority ? path.withoutPriority : path
        case .transaction(let path, _, _, _), .update(let path, _): return path
        case .overwrites(let entries): return entries.first?.path ?? .root
        }
    }
}
