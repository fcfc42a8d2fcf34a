public import CoreMetrics
import HearthCore
import HearthStorage
import NIOConcurrencyHelpers
public import Prometheus

/// The metrics of one server: what `GET /.well-known/hearth/metrics` renders for Prometheus and
/// what the stats endpoint reads. Thread-safe.
///
/// Each server owns its own `PrometheusCollectorRegistry` (nothing goes through the global
/// `MetricsSystem`: tests run many servers in one process), and creates every metric from it once,
/// at start. docs/OBSERVABILITY.md lists the metrics.
///
/// Cost on the hot paths: the engine counts a turn's requests, errors, writes and events in its own
/// `EngineTally` without locks and hands it over once per turn (`publish`: one lock, a few atomic
/// additions and two histogram records). Connections cost a lock and an atomic at open and close.
/// Rules denials, failed authentications and limit hits are already counted by the security
/// state; they, the uptime and the snapshot size are read when metrics or stats are rendered.
public final class ServerMetrics: Sendable {
    /// The protocol of a client connection.
    public enum ConnectionKind: Int, Sendable, CaseIterable {
        /// The line protocol over TCP (or TLS).
        case tcp
        /// The HTTP API (REST and Server-Sent Events).
        case http
        /// Firebase's realtime protocol (WebSocket).
        case firebase

        var label: String {
            switch self {
            case .tcp: "tcp"
            case .http: "http"
            case .firebase: "firebase"
            }
        }
    }

    /// The registry every metric of this server lives in.
    public let registry: PrometheusCollectorRegistry
    /// A cluster node's own metrics (Replication/ClusterMetrics); nil standalone.
    package let cluster = NIOLockedValueBox<ClusterMetrics?>(nil)

    /// A swift-metrics factory over `registry`, for code that wants swift-metrics' types
    /// (`Counter(label:dimensions:factory:)`, `Timer(label:dimensions:factory:)`): what it makes
    /// is rendered with the rest. A name already used below must keep its type and help text
    /// (the registry stops the process otherwise).
    public var metricsFactory: any MetricsFactory { PrometheusMetricsFactory(registry: registry) }

    /// When the server started (wall clock, ms since the epoch).
    package let startedAtMilliseconds: Int64
    /// The slowest and the unindexed queries of the last minutes.
    package let queryStats: QueryStats
    private let started = ContinuousClock.now
    /// The log whose sizes are shown (any-thread members only); nil in memory.
    package let storage: Storage?
    private let counters: SecurityCounters

    private let connections: [Prometheus.Gauge]
    private let streams: Prometheus.Gauge
    private let subscriptions: Prometheus.Gauge
    private let views: Prometheus.Gauge
    private let requests: [Prometheus.Counter]
    private let writes: Prometheus.Counter
    private let events: Prometheus.Counter
    private let turnDuration: DurationHistogram
    private let turnSize: ValueHistogram
    private let fsyncDuration: DurationHistogram
    private let walBytes: Prometheus.Gauge
    private let snapshotBytes: Prometheus.Gauge
    private let rev: Prometheus.Gauge
    private let denials: Prometheus.Counter
    private let authFailures: Prometheus.Counter
    private let limitHits: Prometheus.Counter
    private let storageFailed: Prometheus.Gauge
    private let uptime: Prometheus.Gauge
    private let state = NIOLockedValueBox(Totals())

    /// The numbers the stats endpoint shows, kept beside the Prometheus metrics (which cannot be
    /// read back). Guarded by `state`'s lock.
    package struct Totals: Sendable {
        package var connections = [Int](repeating: 0, count: ConnectionKind.allCases.count)
        package var streams = 0
        package var requests = 0
        package var errors = 0
        package var writes = 0
        package var events = 0
        package var turns = 0
        package var submissions = 0
        package var turnNanoseconds: Int64 = 0
        package var maxTurnNanoseconds: Int64 = 0
        package var maxTurnSubmissions = 0
        package var fsyncs = 0
        package var fsyncNanoseconds: Int64 = 0
        package var maxFsyncNanoseconds: Int64 = 0
        package var rev: UInt64 = 0
        package var walBytes: Int64 = 0
        package var subscriptions = 0
        package var views = 0
        /// Why the storage failed; nil while it works.
        package var storageFailure: String?
        /// The security counts as last copied into the Prometheus counters.
        package var denials = 0
        package var authFailures = 0
        package var limitHits = 0
    }

    /// What the engine shows after a turn (read on its thread, published with the turn).
    struct EngineGauges {
        var rev: UInt64
        var subscriptions: Int
        var views: Int
        /// nil: unchanged since the last turn (read only after turns that wrote).
        var walBytes: Int64?
    }

    /// Makes every metric in a new registry. `storage` (any-thread members only) and `counters`
    /// are read when metrics are rendered; `clock` is the server's (ms since the epoch).
    package init(storage: Storage?, counters: SecurityCounters, clock: @escaping @Sendable () -> Int64) {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        self.storage = storage
        self.counters = counters
        self.startedAtMilliseconds = clock()
        self.queryStats = QueryStats(clock: clock)
        connections = ConnectionKind.allCases.map { kind in
            registry.makeGauge(
                descriptor: Self.name(
                    "connections",
                    help: "Open client connections, by protocol (tcp: the line protocol, http: the HTTP API)."),
                labels: [("protocol", kind.label)])
        }
        streams = registry.makeGauge(
            descriptor: Self.name("sse_streams", help: "Open Server-Sent Events streams of the HTTP API."))
        subscriptions = registry.makeGauge(
            descriptor: Self.name("subscriptions", help: "Live subscriptions and event streams, over all connections."))
        views = registry.makeGauge(
            descriptor: Self.name(
                "views", help: "Live views (distinct location and query pairs that subscriptions share)."))
        requests = OperationLabel.allCases.map { op in
            registry.makeCounter(
                descriptor: Self.name(
                    "requests", unit: "total",
                    help:
                        "Requests handled, by operation (rejected: answered by the connection, never reached the engine)."
                ),
                labels: [("op", op.name)])
        }
        writes = registry.makeCounter(
            descriptor: Self.name(
                "writes", unit: "total",
                help: "Writes committed (each one revision), in the log under its fsync policy."))
        events = registry.makeCounter(
            descriptor: Self.name(
                "events", unit: "total", help: "Data events handed to connections (one per subscriber and change)."))
        turnDuration = registry.makeDurationHistogram(
            descriptor: Self.name(
                "engine_turn_duration", unit: "seconds",
                help:
                    "Time of one engine turn: applying a batch of submissions, committing and handing out the results."),
            buckets: Self.turnBuckets)
        turnSize = registry.makeValueHistogram(
            descriptor: Self.name(
                "engine_turn_submissions",
                help: "Submissions (requests, disconnects, barriers) handled in one engine turn."),
            buckets: Self.batchBuckets)
        fsyncDuration = registry.makeDurationHistogram(
            descriptor: Self.name(
                "fsync_duration", unit: "seconds", help: "Time of one fsync of the write-ahead log."),
            buckets: Self.fsyncBuckets)
        walBytes = registry.makeGauge(
            descriptor: Self.name(
                "wal", unit: "bytes", help: "Bytes of write-ahead log not yet covered by a snapshot."))
        snapshotBytes = registry.makeGauge(
            descriptor: Self.name(
                "snapshot", unit: "bytes", help: "Size of the snapshot recovery would start from."))
        rev = registry.makeGauge(descriptor: Self.name("rev", help: "The database's current revision."))
        denials = registry.makeCounter(
            descriptor: Self.name("rules_denials", unit: "total", help: "Reads and writes the rules denied."))
        authFailures = registry.makeCounter(
            descriptor: Self.name(
                "auth_failures", unit: "total", help: "Failed authentications (invalid or expired tokens)."))
        limitHits = registry.makeCounter(
            descriptor: Self.name(
                "limit_hits", unit: "total",
                help: "Connections, writes and authentications turned away by the protection limits."))
        storageFailed = registry.makeGauge(
            descriptor: Self.name(
                "storage_failed", help: "1 once the storage failed (writes are refused until a restart), else 0."))
        uptime = registry.makeGauge(
            descriptor: Self.name("uptime", unit: "seconds", help: "Seconds since the server started."))
    }

    /// `hearth_<name>[_<unit>]`, with its help text.
    private static func name(_ name: String, unit: String = "", help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "hearth", metricName: name, unitName: unit, helpText: help)
    }

    /// `hearth_request_errors_total` (a descriptor is not `Sendable`: made when needed).
    private static var errorsName: MetricNameDescriptor {
        name("request_errors", unit: "total", help: "Requests answered with an error, by operation and error code.")
    }

    static let turnBuckets: [Duration] = [
        .microseconds(10), .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500),
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
    ]
    static let batchBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384]
    static let fsyncBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .seconds(1), .microseconds(2_500_000),
    ]

    // MARK: Hooks

    /// A client connection was accepted (and admitted by the limits).
    public func connectionOpened(kind: ConnectionKind) {
        state.withLockedValue { $0.connections[kind.rawValue] += 1 }
        connections[kind.rawValue].increment()
    }

    /// A connection counted by `connectionOpened` closed.
    public func connectionClosed(kind: ConnectionKind) {
        state.withLockedValue { $0.connections[kind.rawValue] -= 1 }
        connections[kind.rawValue].decrement()
    }

    /// An HTTP Server-Sent Events stream started.
    public func streamOpened() {
        state.withLockedValue { $0.streams += 1 }
        streams.increment()
    }

    /// A stream counted by `streamOpened` ended.
    public func streamClosed() {
        state.withLockedValue { $0.streams -= 1 }
        streams.decrement()
    }

    /// A request answered with an error before it reached the engine (the engine counts the rest):
    /// counted under `op`, `rejected` when its operation is unknown.
    public func requestRejected(op: OperationLabel = .rejected, errorCode: DatabaseError.Code) {
        state.withLockedValue { totals in
            totals.requests += 1
            totals.errors += 1
        }
        requests[op.rawValue].increment()
        errorCounter(op, errorCode).increment()
    }

    /// One fsync of the log took `duration` (the storage's observer; engine thread).
    package func fsync(duration: Duration) {
        let nanoseconds = duration.inNanoseconds
        state.withLockedValue { totals in
            totals.fsyncs += 1
            totals.fsyncNanoseconds &+= nanoseconds
            totals.maxFsyncNanoseconds = max(totals.maxFsyncNanoseconds, nanoseconds)
        }
        fsyncDuration.record(duration)
    }

    /// The storage failed: health turns 503 with `reason`.
    func storageFailed(reason: String) {
        state.withLockedValue { totals in
            if totals.storageFailure == nil { totals.storageFailure = reason }
        }
        storageFailed.set(to: 1)
    }

    /// Why the storage failed, or nil while it works.
    package var storageFailure: String? { state.withLockedValue { $0.storageFailure } }

    /// The writes the engine has applied since the server started.
    package var writesApplied: Int { state.withLockedValue { $0.writes } }

    /// Takes one engine turn: its duration, its number of submissions, what `tally` counted
    /// (which is reset) and the engine's gauges. Engine thread, once per turn.
    func publish(
        _ tally: inout EngineTally, duration: Duration, submissions: Int, gauges: EngineGauges
    ) {
        let nanoseconds = duration.inNanoseconds
        var requestCount = 0
        for (index, count) in tally.requests.enumerated() where count > 0 {
            requests[index].increment(by: Int64(count))
            requestCount += count
        }
        for (op, code) in tally.errors { errorCounter(op, code).increment() }
        if tally.writes > 0 { writes.increment(by: Int64(tally.writes)) }
        if tally.events > 0 { events.increment(by: Int64(tally.events)) }
        turnDuration.record(duration)
        turnSize.record(Double(submissions))
        rev.set(to: Double(gauges.rev))
        subscriptions.set(to: Double(gauges.subscriptions))
        views.set(to: Double(gauges.views))
        if let bytes = gauges.walBytes { walBytes.set(to: Double(bytes)) }
        let (errorCount, writeCount, eventCount) = (tally.errors.count, tally.writes, tally.events)
        state.withLockedValue { totals in
            totals.requests += requestCount
            totals.errors += errorCount
            totals.writes += writeCount
            totals.events += eventCount
            totals.turns += 1
            totals.submissions += submissions
            totals.turnNanoseconds &+= nanoseconds
            totals.maxTurnNanoseconds = max(totals.maxTurnNanoseconds, nanoseconds)
            totals.maxTurnSubmissions = max(totals.maxTurnSubmissions, submissions)
            totals.rev = gauges.rev
            totals.subscriptions = gauges.subscriptions
            totals.views = gauges.views
            if let bytes = gauges.walBytes { totals.walBytes = bytes }
        }
        tally.reset()
    }

    /// The counter of errors `code` answered to `op` (made on first use: most pairs never occur).
    private func errorCounter(_ op: OperationLabel, _ code: DatabaseError.Code) -> Prometheus.Counter {
        registry.makeCounter(descriptor: Self.errorsName, labels: [("op", op.name), ("code", code.rawValue)])
    }

    // MARK: Reading

    /// Copies what is read rather than hooked (security counts, storage size, uptime) into the
    /// metrics, and returns the totals. Any thread.
    package func refresh() -> Totals {

        let (denied, failedAuths, hits) = (
            counters.denials.count, counters.failedAuths.count, counters.limitHits.count
        )
        if let storage { snapshotBytes.set(to: Double(storage.snapshotBytes)) }
        uptime.set(to: Double((ContinuousClock.now - started).inNanoseconds) / 1e9)
        return state.withLockedValue { totals in
            // Under the lock, so that two concurrent readers add each difference once.
            if denied > totals.denials { denials.increment(by: Int64(denied - totals.denials)) }
            if failedAuths > totals.authFailures {
                authFailures.increment(by: Int64(failedAuths - totals.authFailures))
            }
            if hits > totals.limitHits { limitHits.increment(by: Int64(hits - totals.limitHits)) }
            totals.denials = max(totals.denials, denied)
            totals.authFailures = max(totals.authFailures, failedAuths)
            totals.limitHits = max(totals.limitHits, hits)
            return totals
        }
    }

    /// Seconds since the server started.
    package var uptimeSeconds: Double { Double((ContinuousClock.now - started).inNanoseconds) / 1e9 }

    /// Every metric in the Prometheus text exposition format (version 0.0.4).
    public func prometheusText() -> String {
        String(decoding: prometheusBytes(), as: UTF8.self)
    }

    /// `prometheusText()` as UTF-8 bytes, ready for a response body.
    public func prometheusBytes() -> [UInt8] {
        _ = refresh()
        return registry.emitToBuffer()
    }
}
