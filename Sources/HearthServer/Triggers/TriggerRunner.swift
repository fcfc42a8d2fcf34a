import HearthCore
import HearthEngine
import HearthJSON
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Prometheus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Delivers one database's triggers from its log (docs/triggers.md).
///
/// The engine only logs each write's author and time and, after each commit, tells the runner
/// how far the log goes (`loggedThrough`); everything else happens on the runner's own thread:
/// reading the log behind the engine (`LogArchive`), working out each trigger's events, POSTing
/// them, retrying, dead-lettering and saving cursors. A write never waits for a trigger.
///
/// At least once: a trigger's cursor (saved on each `tick` it moved) moves only over
/// delivered or dead-lettered events, and after a restart everything after it is read again
/// from the log, which the storage keeps for the triggers behind (`StorageOptions
/// .retainedLogDirectory`) up to the backlog bound; past it the kept files are dropped, and the
/// triggers that needed them are marked `lost` with the number of revisions they skipped.
///
/// State is guarded by `lock`; the work runs on `loop`.
final class TriggerRunner: TriggerControl, @unchecked Sendable {
    /// What a runner needs from its database and server.
    struct Context: Sendable {
        let database: String
        let dataDirectory: String
        let configured: [TriggerSettings]
        let loop: any EventLoop
        let fileSystem: any FileSystem
        let logger: Logger
        let clock: @Sendable () -> Int64
        let registry: PrometheusCollectorRegistry
        let backlogMaxBytes: Int64
        let backlogMaxSeconds: Int64
        /// The log's last revision when the runner starts.
        let openedRev: UInt64
        /// Turns the logging of writes' authors on or off in the engine.
        let logAuthors: @Sendable (Bool) -> Void
        /// Whether the database is a cluster member's: only its leader delivers, and triggers
        /// come from the configuration only (the same on every member).
        let clustered: Bool
        /// Whether this node delivers now (standalone, or leading).
        let delivers: @Sendable () -> Bool
        /// Sends the cursors to the replicas (a leader).
        let shareCursors: @Sendable (JSONValue) -> Void
    }

    /// The thread every database's trigger work runs on, deliveries included, for the life of
    /// the process. Its scheduling priority is lowered (nice 10): when the cores are busy the
    /// engines and connections go first, and triggers take what is left, catching up from the
    /// log afterwards.
    static let thread: MultiThreadedEventLoopGroup = {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        group.next().execute { lowerThisThreadsPriority() }
        return group
    }()

    static let maxDeadLetters = 10_000
    /// Records a trigger reads in one turn of the runner's thread.
    static let readBudget = 512
    static let maxAnswerBytes = 64 * 1024
    static let tick = TimeAmount.milliseconds(100)
    /// How often a leader sends its cursors to its replicas at most (ms): what a failover may
    /// repeat beyond the events in flight is those delivered in the last interval.
    static let cursorShareInterval: Int64 = 10

    let context: Context
    let files: TriggerFiles
    private let lock = NIOLock()
    private var workers: [String: TriggerWorker] = [:]
    private var metrics: [String: TriggerMetrics] = [:]
    private var stored: [TriggerSettings] = []
    private var timer: RepeatedTask?
    private var lastBacklogCheck: Int64 = 0
    /// The newest writes, read once for every trigger near the head.
    private var tail: LogTail?
    private var lastShare: Int64 = 0
    private var sharedCursors: JSONValue?
    /// Whether this node delivered at the last pump (a cluster member changes role).
    private var delivering = false
    private var stopped = false
    /// The log's last revision the runner may read (any thread).
    private let head: Synchronization.Atomic<UInt64>
    private let pumpScheduled = Synchronization.Atomic<Bool>(false)
    private let hasTriggers = Synchronization.Atomic<Bool>(false)
    /// Whether a new record could give some trigger work now: false while every trigger waits
    /// for a retry (the tick then does the waking), so that the engine's commits wake nothing.
    private let wantsLogNews = Synchronization.Atomic<Bool>(true)
    private var logger: Logger { context.logger }

    private init(context: Context) {
        self.context = context
        self.files = TriggerFiles(dataDirectory: context.dataDirectory, fileSystem: context.fileSystem)
        self.head = Synchronization.Atomic(context.openedRev)
    }

    /// Where the storage of a database keeps the log files its triggers still need.
    static func retainedLogDirectory(dataDirectory: String, fileSystem: any FileSystem) -> String {
        TriggerFiles(dataDirectory: dataDirectory, fileSystem: fileSystem).retainedLogDirectory
    }

    /// Loads the triggers (configured and stored), their cursors and dead letters, and starts.
    static func start(_ context: Context) throws -> TriggerRunner {
        let runner = TriggerRunner(context: context)
        runner.stored = try runner.files.storedTriggers(source: "triggers.json")
        try runner.lock.withLock { () throws in
            for settings in context.configured { try runner.install(settings, source: .configuration) }
            for settings in runner.stored where runner.workers[settings.name] == nil {
                try runner.install(settings, source: .api)
            }
        }
        runner.triggersChanged()
        runner.timer = context.loop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in runner.onTick() }
        if !context.configured.isEmpty || !runner.stored.isEmpty {
            runner.logger.info(
                "triggers started", metadata: ["triggers": "\(runner.lock.withLock { runner.workers.keys.sorted() })"])
        }
        return runner
    }

    /// Makes the worker of a trigger, at its saved cursor or, for a new one, at the log's end.
    private func install(_ settings: TriggerSettings, source: TriggerSource) throws {
        // The folder (and the log kept in it) exists once the database has a trigger.
        try files.prepare()
        let url = try HTTPURL(settings.url, source: "trigger \(settings.name)", setting: "url")
        let tls = url.secure ? try HTTPRequester.tlsContext(caFile: settings.caFile) : nil
        var cursor = files.cursor(of: settings.name)
        if cursor == nil {
            let start = TriggerFiles.Cursor(rev: head.load(ordering: .relaxed), lostRevisions: 0)
            try files.save(start, of: settings.name)
            cursor = start
        }
        let saved = cursor ?? TriggerFiles.Cursor(rev: 0, lostRevisions: 0)
        let worker = TriggerWorker(
            settings: settings, source: source, url: url,
            pool: HTTPConnectionPool(url: url, tls: tls, loop: context.loop), cursor: saved,
            deadLetters: files.deadLetters(of: settings.name))
        workers[settings.name] = worker
        dropTail()
        metrics[settings.name] =
            metrics[settings.name] ?? TriggerMetrics(registry: context.registry, trigger: settings.name)
    }

    private func triggersChanged() {
        let any = lock.withLock { !workers.isEmpty }
        hasTriggers.store(any, ordering: .relaxed)
        wantsLogNews.store(true, ordering: .relaxed)
        context.logAuthors(any)
    }

    /// The log holds every record through `rev` for good. Any thread (the engine's, after a
    /// commit, or the storage's sync thread).
    func loggedThrough(_ rev: UInt64) {
        head.max(rev, ordering: .relaxed)
        guard hasTriggers.load(ordering: .relaxed), wantsLogNews.load(ordering: .relaxed) else { return }
        if pumpScheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            context.loop.execute { self.pump() }
        }
    }

    /// Whether some trigger has events left to deliver (the database then stays open).
    var hasUndelivered: Bool {
        let limit = head.load(ordering: .relaxed)
        return lock.withLock { workers.values.contains { $0.cursor < limit || !$0.replays.isEmpty } }
    }

    /// Stops delivering and saves the cursors (the database is closing).
    func stop() {
        timer?.cancel()
        lock.withLock {
            stopped = true
            for worker in workers.values { saveCursor(worker) }
            for worker in workers.values {
                worker.close()
                worker.pool.close()
            }
            dropTail()
        }
        context.logAuthors(false)
    }

    // MARK: The work

    private func onTick() {
        let now = context.clock()
        lock.withLock {
            guard !stopped else { return }
            for worker in workers.values { saveCursor(worker) }
            if context.clustered, delivering { shareCursors(now: now) }
            if now - lastBacklogCheck >= 1000,
                !workers.isEmpty || context.fileSystem.fileExists(files.retainedLogDirectory)
            {
                lastBacklogCheck = now
                enforceBacklog(now: now)
            }
            for (name, worker) in workers { metrics[name]?.update(status(of: worker, now: now)) }
        }
        pump()
    }

    /// Reads what each trigger can read and sends what is due (on a node that delivers).
    private func pump() {
        pumpScheduled.store(false, ordering: .relaxed)
        let now = context.clock()
        let delivers = context.delivers()
        var sends: [(worker: TriggerWorker, generation: Int, event: TriggerWorker.Pending, replay: Bool)] = []
        var more = false
        lock.withLock {
            guard !stopped else { return }
            if delivers != delivering {
                // Elected (or stepped down): start over from the cursors, which a replica
                // kept as its leader sent them; answers to what was in flight are ignored.
                delivering = delivers
                for worker in workers.values { worker.resetToCursor() }
                dropTail()
                if delivers { logger.info("delivering triggers from their cursors", metadata: ["leading": "true"]) }
            }
            guard delivers else {
                wantsLogNews.store(false, ordering: .relaxed)
                return
            }
            let limit = head.load(ordering: .relaxed)
            var trees: [UInt64: Node] = [:]
            let archive = archive
            more = false
            if tail == nil, !workers.isEmpty { tail = makeTail(archive: archive, trees: &trees) }
            for worker in workers.values {
                do {
                    let reading = try worker.read(
                        through: limit, tail: tail, archive: archive, trees: &trees, database: context.database,
                        now: now, budget: Self.readBudget)
                    if reading { more = true }
                } catch {
                    // The tail's reader may have failed too: it starts again on the next pass.
                    dropTail()
                    skipGap(worker, because: "\(error)", trees: &trees)
                }
                let replaying = Set(worker.replays.map(\.id))
                for event in worker.due(now: now) {
                    sends.append((worker, worker.generation, event, replaying.contains(event.id) && event.replayed))
                }
            }
            wantsLogNews.store(workers.values.contains { !$0.waitsForARetry }, ordering: .relaxed)
        }
        for send in sends { deliver(send.event, of: send.worker, generation: send.generation, replay: send.replay) }
        // More to read: after the answers that came meanwhile.
        if more, pumpScheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            context.loop.execute { self.pump() }
        }
    }

    /// A tail at the revision the furthest trigger has read to, covering every trigger's
    /// prefix; nil when the log cannot rebuild the tree there (the triggers then read on their
    /// own).
    private func makeTail(archive: LogArchive, trees: inout [UInt64: Node]) -> LogTail? {
        guard let rev = workers.values.map({ $0.nextRev - 1 }).max() else { return nil }
        if trees[rev] == nil { trees[rev] = try? archive.tree(at: rev) }
        guard let tree = trees[rev] else { return nil }
        return LogTail(rev: rev, tree: tree, prefixes: workers.values.map(\.prefix), archive: archive)
    }

    /// Forgets the tail (the triggers changed, or its log is gone): the next pass makes another.
    private func dropTail() {
        tail?.close()
        tail = nil
    }

    private var archive: LogArchive {
        LogArchive(
            dataDirectory: context.dataDirectory, retainedDirectory: files.retainedLogDirectory,
            fileSystem: context.fileSystem)
    }

    /// The log a worker needs is gone: it goes on from the oldest revision the log can rebuild,
    /// marked lost.
    private func skipGap(_ worker: TriggerWorker, because reason: String, trees: inout [UInt64: Node]) {
        let archive = archive
        let base = max(archive.currentSnapshotRev, worker.cursor)
        let tree: Node?
        if let memo = trees[base] {
            tree = memo
        } else {
            tree = try? archive.tree(at: base)
            if let tree { trees[base] = tree }
        }
        guard let tree else {
            logger.error(
                "trigger cannot read the log; retrying",
                metadata: ["trigger": "\(worker.settings.name)", "error": "\(reason)"])
            worker.close()
            return
        }
        let skipped = base - worker.cursor
        worker.lostRevisions += skipped
        worker.lost = true
        worker.lastError = "events lost: the log after rev \(worker.cursor) was dropped (\(reason))"
        logger.error(
            "TRIGGER LOST EVENTS: the log it needed was dropped",
            metadata: [
                "trigger": "\(worker.settings.name)", "fromRev": "\(worker.cursor)", "toRev": "\(base)",
                "reason": "\(reason)",
            ])
        worker.cursor = base
        worker.restart(at: base, tree: tree, archive: archive)
        saveCursor(worker)
    }

    /// Past the backlog bound (bytes or age of the kept log files), drops them; the triggers
    /// that needed them are marked lost at their next read. Otherwise prunes what no cursor
    /// needs.
    private func enforceBacklog(now: Int64) {
        let archive = archive
        let floor = workers.values.map(\.cursor).min() ?? head.load(ordering: .relaxed)
        archive.prune(keepingFrom: floor)
        let bytes = archive.retainedBytes
        let age = archive.oldestRetainedTime.map { now / 1000 - $0 } ?? 0
        guard bytes > context.backlogMaxBytes || age > context.backlogMaxSeconds else { return }
        logger.error(
            "trigger backlog past its bound: dropping the kept log",
            metadata: [
                "bytes": "\(bytes)", "maxBytes": "\(context.backlogMaxBytes)", "ageSeconds": "\(age)",
                "maxSeconds": "\(context.backlogMaxSeconds)",
            ])
        archive.dropRetained()
        dropTail()
        let base = archive.currentSnapshotRev
        var trees: [UInt64: Node] = [:]
        for worker in workers.values where worker.cursor < base {
            skipGap(worker, because: "the trigger backlog passed its bound", trees: &trees)
        }
    }

    /// A leader's cursors to its replicas: when they changed (at most every
    /// `cursorShareInterval`), and every second for a replica that joined since.
    private func shareCursors(now: Int64) {
        guard now - lastShare >= Self.cursorShareInterval else { return }
        let cursors = JSONValue.object(
            workers.values.sorted { $0.settings.name < $1.settings.name }.map { worker in
                JSONMember(
                    worker.settings.name,
                    .object([
                        JSONMember("rev", .int(Int64(clamping: worker.cursor))),
                        JSONMember("lostRevisions", .int(Int64(clamping: worker.lostRevisions))),
                    ]))
            })
        guard cursors != sharedCursors || now - lastShare >= 1000 else { return }
        sharedCursors = cursors
        lastShare = now
        context.shareCursors(cursors)
    }

    /// A replica takes its leader's cursors (kept, and saved with the next tick). Any thread.
    func adopt(cursors: JSONValue) {
        guard case .object(let members) = cursors else { return }
        lock.withLock {
            guard !delivering else { return }
            for member in members {
                guard let worker = workers[member.key], let rev = member.value["rev"]?.int64Value, rev >= 0 else {
                    continue
                }
                worker.cursor = max(worker.cursor, UInt64(rev))
                if let lost = member.value["lostRevisions"]?.int64Value, lost >= 0 {
                    worker.lostRevisions = max(worker.lostRevisions, UInt64(lost))
                }
            }
        }
    }

    /// Saves the cursor when it moved since it was last saved.
    private func saveCursor(_ worker: TriggerWorker) {
        let record = worker.cursorRecord
        guard record != worker.savedCursor else { return }
        do {
            try files.save(record, of: worker.settings.name)
            worker.savedCursor = record
        } catch {
            logger.error(
                "could not save a trigger's cursor",
                metadata: ["trigger": "\(worker.settings.name)", "error": "\(error)"])
        }
    }

    private func deliver(_ event: TriggerWorker.Pending, of worker: TriggerWorker, generation: Int, replay: Bool) {
        let settings = worker.settings
        let request = settings.request(
            body: event.body, id: event.id, url: worker.url, time: context.clock() / 1000)
        let name = settings.name
        let identity = ObjectIdentifier(worker)
        let timeout = TimeAmount.milliseconds(Int64(settings.timeoutMilliseconds))
        worker.pool.send(request, timeout: timeout, maxBytes: Self.maxAnswerBytes).whenComplete { result in
            var failure: String?
            switch result {
            case .success(let answer):
                if !(200..<300).contains(answer.status) { failure = "HTTP \(answer.status)" }
            case .failure(let error):
                failure = "\(error)"
            }
            self.finished(
                event.id, of: name, identity: identity, generation: generation, replay: replay, failure: failure)
        }
    }

    private func finished(
        _ id: String, of name: String, identity: ObjectIdentifier, generation: Int, replay: Bool, failure: String?
    ) {
        let now = context.clock()
        lock.withLock {
            guard !stopped, let worker = workers[name], ObjectIdentifier(worker) == identity,
                worker.generation == generation
            else { return }
            let outcome = worker.finished(id: id, replay: replay, error: failure, now: now)
            let metrics = metrics[worker.settings.name]
            if failure == nil { metrics?.delivered.increment() } else { metrics?.failed.increment() }
            if let dead = outcome.dead {
                logger.warning(
                    "trigger event moved to the dead-letter list",
                    metadata: [
                        "trigger": "\(worker.settings.name)", "event": "\(dead.id)", "error": "\(dead.lastError)",
                    ])
                if let index = worker.deadLetters.firstIndex(where: { $0.id == dead.id }) {
                    worker.deadLetters[index] = dead
                } else {
                    worker.deadLetters.append(dead)
                }
                if worker.deadLetters.count > Self.maxDeadLetters {
                    worker.deadLetters.removeFirst(worker.deadLetters.count - Self.maxDeadLetters)
                }
                saveDeadLetters(worker)
            } else if failure != nil {
                metrics?.retried.increment()
            }
            if outcome.replayDelivered {
                worker.deadLetters.removeAll { $0.id == id }
                saveDeadLetters(worker)
            }
            if context.clustered, delivering { shareCursors(now: now) }
        }
        pump()
    }

    private func saveDeadLetters(_ worker: TriggerWorker) {
        do { try files.save(deadLetters: worker.deadLetters, of: worker.settings.name) } catch {
            logger.error(
                "could not save a trigger's dead letters",
                metadata: ["trigger": "\(worker.settings.name)", "error": "\(error)"])
        }
    }

    // MARK: TriggerControl

    private func status(of worker: TriggerWorker, now: Int64) -> TriggerStatus {
        TriggerStatus(
            name: worker.settings.name, path: worker.settings.pattern.text,
            kinds: TriggerKind.allCases.filter(worker.settings.kinds.contains), url: worker.settings.url,
            source: worker.source, state: worker.state, deliveredRev: worker.cursor,
            headRev: head.load(ordering: .relaxed), lagSeconds: worker.lagSeconds(now: now),
            delivered: worker.delivered, failed: worker.failed, retried: worker.retried, inFlight: worker.inFlight,
            deadLetters: worker.deadLetters.count, lostRevisions: worker.lostRevisions, lastError: worker.lastError)
    }

    func statuses() -> [TriggerStatus] {
        let now = context.clock()
        return lock.withLock {
            workers.values.sorted {
                ($0.source == .configuration ? 0 : 1, $0.settings.name) < (
                    $1.source == .configuration ? 0 : 1, $1.settings.name
                )
            }
            .map { status(of: $0, now: now) }
        }
    }

    func add(_ settings: TriggerSettings) throws(DatabaseError) {
        guard !context.clustered else { throw Self.configuredInCluster }
        do {
            try lock.withLock { () throws in
                guard workers[settings.name] == nil else {
                    throw DatabaseError(.badRequest, "a trigger named \"\(settings.name)\" already exists")
                }
                // A new trigger starts at the log's end, even if an old one of that name left a cursor.
                files.forget(settings.name)
                try install(settings, source: .api)
                stored.append(settings)
                try files.save(storedTriggers: stored)
            }
        } catch let error as DatabaseError {
            throw error
        } catch {
            throw DatabaseError(.badRequest, "trigger \(settings.name): \(error)")
        }
        logger.info("trigger added", metadata: ["trigger": "\(settings.name)", "path": "\(settings.pattern.text)"])
        triggersChanged()
    }

    func remove(_ name: String) throws(DatabaseError) {
        guard !context.clustered else { throw Self.configuredInCluster }
        do {
            try lock.withLock { () throws in
                guard let worker = workers[name] else { throw DatabaseError(.notFound, "no trigger named \"\(name)\"") }
                guard worker.source == .api else {
                    throw DatabaseError(
                        .badRequest, "trigger \"\(name)\" is declared in the configuration file: remove it there")
                }
                worker.close()
                worker.pool.close()
                workers[name] = nil
                metrics.removeValue(forKey: name)?.unregister(from: context.registry)
                dropTail()
                stored.removeAll { $0.name == name }
                try files.save(storedTriggers: stored)
                files.forget(name)
            }
        } catch let error as DatabaseError {
            throw error
        } catch {
            throw DatabaseError(.internal, "removing trigger \(name): \(error)")
        }
        logger.info("trigger removed", metadata: ["trigger": "\(name)"])
        triggersChanged()
    }

    static var configuredInCluster: DatabaseError {
        DatabaseError(
            .badRequest,
            "a cluster's triggers are declared in the configuration of every member (docs/triggers.md), not through the admin API"
        )
    }

    func deadLetters(_ name: String, limit: Int) throws(DatabaseError) -> [DeadLetter] {
        let letters = lock.withLock { workers[name].map { Array($0.deadLetters.prefix(max(0, limit))) } }
        guard let letters else { throw DatabaseError(.notFound, "no trigger named \"\(name)\"") }
        return letters
    }

    func replay(_ name: String, ids: [String]?) throws(DatabaseError) -> Int {
        let count: Int? = lock.withLock {
            guard let worker = workers[name] else { return nil }
            worker.lost = false
            if worker.lastError?.hasPrefix("events lost") == true { worker.lastError = nil }
            let queued = Set(worker.replays.map(\.id))
            let chosen = worker.deadLetters.filter { ids.map(Set.init)?.contains($0.id) ?? true }
            var added = 0
            for letter in chosen where !queued.contains(letter.id) {
                var event = TriggerWorker.Pending(
                    id: letter.id, rev: letter.rev, path: letter.path, kind: letter.kind, writtenAt: context.clock(),
                    body: letter.body)
                event.replayed = true
                worker.replays.append(event)
                added += 1
            }
            return added
        }
        guard let count else { throw DatabaseError(.notFound, "no trigger named \"\(name)\"") }
        context.loop.execute { self.pump() }
        return count
    }
}

/// Lowers the calling thread's scheduling priority to nice 10 (on Linux the nice value is a
/// thread's, and `setpriority` of "the calling process", 0, changes the calling thread's).
private func lowerThisThreadsPriority() {
    #if canImport(Glibc)
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
    #endif
}
