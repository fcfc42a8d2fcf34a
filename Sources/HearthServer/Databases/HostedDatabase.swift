import HearthCore
import HearthEngine
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// One open database: its storage, metrics and engine, the engine running on one of the
/// daemon's engine threads. Opening recovers the folder; closing (idle, deleted, shutdown)
/// waits for the engine's queued work, runs nothing more, and closes the log.
final class HostedDatabase: Sendable {
    let name: DatabaseName
    let directory: String
    let engine: Engine
    /// Delivers the database's triggers from its log.
    let triggers: TriggerRunner
    private let timers: NIOLockedValueBox<[RepeatedTask]>
    /// The revision recovery found.
    private let openedRev: UInt64

    /// The revision as of the engine's last turn. Any thread.
    var rev: UInt64 { max(openedRev, engine.metrics.refresh().rev) }

    private init(
        name: DatabaseName, directory: String, engine: Engine, triggers: TriggerRunner, timers: [RepeatedTask],
        openedRev: UInt64
    ) {
        self.openedRev = openedRev
        self.triggers = triggers
        self.name = name
        self.directory = directory
        self.engine = engine
        self.timers = NIOLockedValueBox(timers)
    }

    /// What opening a database needs from the daemon.
    struct Context: Sendable {
        let configuration: ServerConfiguration
        let access: AccessState
        let fileSystem: any FileSystem
        let logger: Logger
        let clock: @Sendable () -> Int64
        /// The security counters the database's metrics report: the daemon's for the default
        /// database, fresh ones for the others (so that the daemon's counts show once).
        let counters: @Sendable (DatabaseName) -> SecurityCounters
        /// Whether this daemon is a cluster member (only the leader delivers triggers).
        let clustered: Bool
    }

    /// The rules a database starts with: its own accepted rules (`setRules`), else its rules file
    /// or the server's. A database without rules on a server that is not open gets rules that
    /// grant nothing: only admins reach it until an admin sets its rules.
    static func rules(
        for name: DatabaseName, directory: String, context: Context
    ) throws(ConfigurationError) -> (rules: RuleSet?, store: RulesStore) {
        let settings = context.configuration.databases.settings(for: name.text)
        let store = RulesStore(
            rulesFile: settings.rulesFile ?? context.configuration.rulesFile, dataDirectory: directory)
        var logger = context.logger
        logger[metadataKey: "db"] = "\(name)"
        let (rules, source) = try store.load(logger: logger)
        if let source { logger.info("rules in force", metadata: ["file": "\(source)"]) }
        if rules == nil, !context.access.isOpen {
            return (try? RuleSet(source: #"{"rules":{}}"#), store)
        }
        return (rules, store)
    }

    /// Recovers database `name` from `directory` and starts its engine on `loop`. Blocking: call
    /// it off the event loops.
    static func open(
        name: DatabaseName, directory: String, loop: any EventLoop, context: Context, rules: RuleSet?,
        rulesStore: RulesStore
    ) throws -> HostedDatabase {
        let configuration = context.configuration
        var logger = context.logger
        logger[metadataKey: "db"] = "\(name)"
        var options = StorageOptions.default
        options.fsync = configuration.fsync
        options.compactionMinBytes = configuration.compactionMinBytes
        options.compactionRatio = configuration.compactionRatio
        options.retainedLogDirectory = TriggerRunner.retainedLogDirectory(
            dataDirectory: directory, fileSystem: context.fileSystem)
        let recoveryLog = RecoveryLog(logger: logger, directory: directory)
        let (storage, recovered) = try Storage.open(
            directory: directory, options: options, fileSystem: context.fileSystem, logger: logger,
            progress: recoveryLog.update)
        logger.info(
            "recovered the database",
            metadata: [
                "rev": "\(recovered.rev)", "dataDir": "\(directory)", "onDisconnect": "\(storage.onDisconnect.count)",
            ])
        // The database's own metrics (never the global MetricsSystem: a process may run many).
        let metrics = ServerMetrics(storage: storage, counters: context.counters(name), clock: context.clock)
        storage.fsyncObserver = { metrics.fsync(duration: $0) }
        let engine = Engine(
            loop: loop,
            database: Database(root: recovered.root, rev: recovered.rev, limits: configuration.limits),
            storage: storage, rules: rules, indexRules: IndexRules(), rulesStore: rulesStore,
            access: context.access,
            maxSubscriptionsPerConnection: configuration.protection.maxSubscriptionsPerConnection,
            strictIndexes: configuration.strictIndexes, logger: logger, clock: context.clock,
            metrics: metrics,
            writeIDs: WriteIDWindow(
                recovered: storage.takeRecoveredWriteIDs(), capacity: configuration.writeIdWindow,
                retentionSeconds: configuration.writeIdRetentionSeconds, now: context.clock()),
            changeLogRevisions: configuration.changeLogRevisions)
        engine.storedBytesLimit = configuration.databases.settings(for: name.text).maxBytes
        var timers: [RepeatedTask] = []
        if configuration.fsync == .everysec {
            timers.append(
                loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in engine.syncIfDue() })
        }
        let settings = configuration.databases.settings(for: name.text)
        let triggers = try TriggerRunner.start(
            TriggerRunner.Context(
                database: name.text, dataDirectory: directory,
                configured: settings.triggers.isEmpty ? configuration.triggers : settings.triggers,
                loop: TriggerRunner.thread.next(),
                fileSystem: context.fileSystem, logger: logger, clock: context.clock, registry: metrics.registry,
                backlogMaxBytes: configuration.triggerBacklogMaxBytes,
                backlogMaxSeconds: configuration.triggerBacklogMaxSeconds, openedRev: recovered.rev,
                logAuthors: { [engine] on in engine.logsWriteAuthors.store(on, ordering: .relaxed) },
                clustered: context.clustered,
                delivers: { [engine, clustered = context.clustered] in
                    !clustered || engine.isLeading
                }, shareCursors: { [engine] cursors in engine.shareTriggerCursors(cursors) }))
        engine.logListener.withLockedValue { $0 = { [triggers] rev in triggers.loggedThrough(rev) } }
        engine.triggerCursorsListener.withLockedValue {
            $0 = { [triggers] cursors in triggers.adopt(cursors: cursors) }
        }
        return HostedDatabase(
            name: name, directory: directory, engine: engine, triggers: triggers, timers: timers,
            openedRev: recovered.rev)
    }

    /// Runs the onDisconnect operations the log kept, which belong to connections of the previous
    /// run: on a standalone node those are all gone, so they run before anyone can connect.
    func runOrphanedOnDisconnect() -> EventLoopFuture<Void> {
        engine.loop.submit { [engine] in
            guard let queues = engine.storage?.onDisconnect.queues else { return }
            engine.runOrphanedOnDisconnect(queues)
        }
    }

    /// Lets the engine finish what it was handed, then closes the log. The engine takes nothing
    /// more afterwards: callers make sure no connection uses it.
    func close() async {
        for timer in timers.withLockedValue({ $0 }) { timer.cancel() }
        try? await engine.barrier().get()
        triggers.stop()
        engine.logListener.withLockedValue { $0 = nil }
        try? await engine.loop.submit { [engine] in engine.closeStorage() }.get()
    }
}
