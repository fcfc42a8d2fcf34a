import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

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
    let inbox = NIOLockedValueBox(Inbox())
    // The state every write touches is `@exclusivity(unchecked)`: only the engine's thread
    // touches it, and no access to it calls code that could reach it again, so the runtime's
    // dynamic exclusivity check (two runtime calls per access, on every write) is left out. The
    // compiler's static checks still apply.
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
    let strictIndexes: Bool
    /// Undeclared indexes already warned about, as location and order (one log line each).
    var warnedIndexes: Set<[String]> = []
    let allocator = ByteBufferAllocator()
    /// The write-ahead log; nil keeps the data in memory only.
    package let storage: Storage?
    /// The database's quota of bytes on disk (log and snapshot): over it, writes other than
    /// removes are refused with `quota_exceeded`. Set before the first request; nil: none.
    package var storedBytesLimit: Int64?
    /// Set when the log failed: writes are refused with `unavailable` until a restart.
    var storageFailure: StorageError?
    package let logger: Logger
    let clock: @Sendable () -> Int64
    /// Counts and timings for the metrics and stats endpoints (Metrics/).
    package let metrics: ServerMetrics
    /// This turn's counts, handed to `metrics` at its end.
    @exclusivity(unchecked) var tally = EngineTally()
    /// The outcomes of committed writes that carried a write id (`WriteIDWindow`).
    @exclusivity(unchecked) var writeIDs: WriteIDWindow
    /// The last revisions' replaced nodes, for subscriptions that resume (`ChangeLog`).
    @exclusivity(unchecked) var changeLog: ChangeLog
    /// A cluster member's replication (Replication/); nil standalone. Set on the engine's thread
    /// before the first request (`ClusterReplicator`).
    package var replicator: (any Replicator)?
    /// Hears the revisions the storage's sync thread made durable, for a replicator whose
    /// acknowledgements wait for them. Any thread.
    package let durabilityListener = NIOLockedValueBox<(@Sendable (UInt64) -> Void)?>(nil)
    /// Whether logged writes name their author and time (`WriteAuthor`): on while the
    /// database has triggers, whose events report them. Any thread.
    package let logsWriteAuthors = Atomic<Bool>(false)
    /// Hears the last revision the log holds for good after each commit (after its fsync under
    /// `fsync: always`), for a trigger runner reading the log behind the engine. Any thread.
    package let logListener = NIOLockedValueBox<(@Sendable (UInt64) -> Void)?>(nil)
    /// Hears the trigger cursors a replica's leader sends (`ClusterReplicator`). Any thread.
    package let triggerCursorsListener = NIOLockedValueBox<(@Sendable (JSONValue) -> Void)?>(nil)
    /// The confirmed revision and the outputs waiting for it (any thread).
    package let confirmations = ConfirmationGate()
    /// The batches written to the log whose deferred fsync has not finished, oldest first
    /// (Engine+Durability).
    @exclusivity(unchecked) var undurable: [UndurableBatch] = []
    /// The last turn's batch size, reserved for the next turn's (`Batch.Size`).
    @exclusivity(unchecked) var lastBatchSize = Batch.Size()
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

    /// Whether this engine delivers its database's triggers: standalone, or leading its
    /// cluster. Any thread.
    package var deliversTriggers: Bool { clusterObject() == nil || isLeading }

    /// A leader sends its triggers' cursors to its replicas (nothing standalone). Any thread.
    package func shareTriggerCursors(_ cursors: JSONValue) {
        loop.execute { self.replicator?.shareTriggerCursors(cursors) }
    }

    /// Whether this node leads its cluster (see `leads`). Any thread.
    package var isLeading: Bool { leads.load(ordering: .relaxed) }

    /// Records whether this node leads (engine thread, on each role change).
    func setLeads(_ value: Bool) { leads.store(value, ordering: .relaxed) }

    /// The `cluster` object of `hello`, as of the last change. Any thread.
    package func clusterObject() -> JSONValue? { publishedCluster.withLockedValue { $0 } }

    /// Updates the `cluster` object of `hello`. Engine thread.
    func publishClusterObject(_ object: JSONValue?) { publishedCluster.withLockedValue { $0 = object } }

    struct Inbox {
        /// Each caller's submissions as it handed them over: its array is kept, not copied
        /// element by element into one (a retain of each submission's parts, and a release
        /// when the caller's array lets go).
        var batches: [[Submission]] = []
        var scheduled = false
    }

    package init(
        loop: any EventLoop, database: Database, storage: Storage?, rules: RuleSet?, indexRules: IndexRules,
        rulesStore: any RulesKeeper, access: AccessState, maxSubscriptionsPerConnection: Int, strictIndexes: Bool,
        logger: Logger,
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
}
