import HearthEngine
public import NIOCore

/// The server's own endpoints under `/.well-known/hearth/`, for the HTTP layer to route to:
/// `health` (JSON, 200 or 503), `metrics` (Prometheus text) and `stats` (JSON). They take no
/// parameters and change nothing, so they answer `GET` (and `HEAD`, without the body) alike.
///
/// They show no data, only counts, sizes and the paths and queries of slow and unindexed
/// queries. With rules, the HTTP layer serves stats to admins only, and metrics too under
/// `metricsRequireAdmin`; health is open to every probe. The metrics text is rendered at most
/// once a second by default (`MetricsCache`, `metricsCacheMilliseconds`), so scrapers polling it cost the server next to nothing.
public struct WellKnownEndpoints: Sendable {
    public static let healthPath = "/.well-known/hearth/health"
    public static let metricsPath = "/.well-known/hearth/metrics"
    public static let statsPath = "/.well-known/hearth/stats"

    /// The metrics, for hooks outside the engine (HTTP connections, event streams).
    public let metrics: ServerMetrics
    let health: HealthCheck
    let stats: ServerStats
    let metricsCache: MetricsCache
    /// The loops the responses complete on when the caller names none.
    let eventLoops: any EventLoopGroup
    /// The open databases other than the default one, whose metrics follow the default's.
    let otherDatabases: @Sendable () -> [(name: String, metrics: ServerMetrics)]

    /// - Parameters:
    ///   - eventLoops: where responses complete when the caller names no loop (the I/O loops).
    ///   - healthTimeout: how long the engine has to answer a health check.
    ///   - linePort: the line protocol's bound port, which health answers name.
    init(
        engine: Engine, configuration: ServerConfiguration, security: SecurityState, eventLoops: any EventLoopGroup,
        healthTimeout: TimeAmount = .seconds(2), linePort: Int? = nil,
        otherDatabases: @escaping @Sendable () -> [(name: String, metrics: ServerMetrics)] = { [] }
    ) {
        self.otherDatabases = otherDatabases
        let metrics = engine.metrics
        self.metrics = metrics
        self.health = HealthCheck(
            engine: engine, metrics: metrics, serverName: configuration.serverName, linePort: linePort,
            timeout: healthTimeout)
        self.stats = ServerStats(
            configuration: configuration, metrics: metrics, queryStats: metrics.queryStats, security: security,
            storage: metrics.storage, otherDatabases: otherDatabases)
        self.eventLoops = eventLoops
        self.metricsCache = MetricsCache(interval: .milliseconds(Int64(configuration.metricsCacheMilliseconds)))
    }

    /// The response for `path`, or nil when `path` is not one of these endpoints. A query string
    /// (`?...`) is ignored. The future completes on `eventLoop`: pass the channel's own loop.
    /// Only health waits (for the engine, at most its timeout); the others are complete at once.
    /// Call it while the server runs, not after `shutdown` (the engine's loop is gone then).
    public func respond(to path: String, on eventLoop: any EventLoop) -> EventLoopFuture<WellKnownResponse>? {
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        switch bare {
        case Self.healthPath:
            return health.run(on: eventLoop)
        case Self.metricsPath:
            return eventLoop.makeSucceededFuture(
                WellKnownResponse(
                    status: 200, contentType: WellKnownResponse.prometheusContentType,
                    body: metricsCache.bytes {
                        LabelledMetrics.merge(
                            default: metrics.prometheusBytes(),
                            others: otherDatabases().map { ($0.name, $0.metrics.prometheusBytes()) })
                    }))
        case Self.statsPath:
            return eventLoop.makeSucceededFuture(.json(stats.body()))
        default:
            return nil
        }
    }

    /// `respond(to:on:)` completing on one of the server's I/O event loops.
    public func respond(to path: String) -> EventLoopFuture<WellKnownResponse>? {
        respond(to: path, on: eventLoops.next())
    }
}
