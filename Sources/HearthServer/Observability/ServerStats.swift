import HearthEngine
import HearthJSON
import HearthStorage

/// `GET /.well-known/hearth/stats`: the server at a glance, as JSON for people and a web console
/// (docs/OBSERVABILITY.md shows a body).
///
/// Built from what is readable on any thread (the metrics' totals, as of the engine's last turn,
/// the query lists, the storage's sizes), so it never waits for the engine: stats still answer
/// when health does not.
struct ServerStats: Sendable {
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let queryStats: QueryStats
    let security: SecurityState
    let storage: Storage?
    /// The open databases other than the default one.
    let otherDatabases: @Sendable () -> [(name: String, metrics: ServerMetrics)]

    func body() -> JSONValue {
        let totals = metrics.refresh()
        return .object([
            "server": server(),
            "rev": .int(Int64(clamping: totals.rev)),
            "connections": .object([
                "tcp": count(totals.connections[ServerMetrics.ConnectionKind.tcp.rawValue]),
                "http": count(totals.connections[ServerMetrics.ConnectionKind.http.rawValue]),
                "firebase": count(totals.connections[ServerMetrics.ConnectionKind.firebase.rawValue]),
            ]),
            "sseStreams": count(totals.streams),
            "subscriptions": count(totals.subscriptions),
            "views": count(totals.views),
            "totals": .object([
                "requests": count(totals.requests), "errors": count(totals.errors), "writes": count(totals.writes),
                "events": count(totals.events), "rulesDenials": count(totals.denials),
                "authFailures": count(totals.authFailures), "limitHits": count(totals.limitHits),
            ]),
            "engine": engine(totals),
            "storage": storage(totals),
            "rules": .object([
                "enabled": .bool(!security.isOpen), "strictIndexes": .bool(configuration.strictIndexes),
            ]),
            "queries": queries(),
            "databases": databases(),
        ])
    }

    /// The other open databases' revision and counts (the rest of this body is the default
    /// database's and the daemon's).
    private func databases() -> JSONValue {
        .object(
            otherDatabases().map { database in
                let totals = database.metrics.refresh()
                return JSONMember(
                    database.name,
                    .object([
                        "rev": .int(Int64(clamping: totals.rev)), "requests": count(totals.requests),
                        "writes": count(totals.writes), "subscriptions": count(totals.subscriptions),
                    ]))
            })
    }

    private func server() -> JSONValue {
        .object([
            "name": .string(configuration.serverName), "version": .string(hearthVersion),
            "startedAt": .int(metrics.startedAtMilliseconds), "uptimeSeconds": .int(Int64(metrics.uptimeSeconds)),
        ])
    }

    private func engine(_ totals: ServerMetrics.Totals) -> JSONValue {
        let meanTurn = Self.mean(totals.turnNanoseconds, totals.turns, scale: 1000)
        let meanSubmissions = Self.mean(Int64(totals.submissions), totals.turns, scale: 1)
        return .object([
            "turns": count(totals.turns), "submissions": count(totals.submissions),
            "meanTurnMicros": .double(meanTurn), "maxTurnMicros": .int(totals.maxTurnNanoseconds / 1000),
            "meanSubmissionsPerTurn": .double(meanSubmissions),
            "maxSubmissionsPerTurn": count(totals.maxTurnSubmissions),
        ])
    }

    private func storage(_ totals: ServerMetrics.Totals) -> JSONValue {
        let compactions = storage?.compactionCounts ?? (completed: 0, failed: 0)
        let meanFsync = Self.mean(totals.fsyncNanoseconds, totals.fsyncs, scale: 1000)
        let failure: JSONValue = totals.storageFailure.map { .string($0) } ?? .null
        return .object([
            "dataDir": .string(configuration.dataDirectory), "fsync": .string(configuration.fsync.rawValue),
            "walBytes": .int(totals.walBytes), "snapshotBytes": .int(storage?.snapshotBytes ?? 0),
            "compactions": count(compactions.completed), "failedCompactions": count(compactions.failed),
            "fsyncs": count(totals.fsyncs), "meanFsyncMicros": .double(meanFsync),
            "maxFsyncMicros": .int(totals.maxFsyncNanoseconds / 1000),
            "failed": .bool(totals.storageFailure != nil), "failure": failure,
        ])
    }

    private func queries() -> JSONValue {
        let (slowest, unindexed) = queryStats.report()
        return .object([
            "windowSeconds": .int(queryStats.windowMilliseconds / 1000),
            "slowThresholdMicros": .int(queryStats.slowThreshold.inMicroseconds),
            "slowest": .array(slowest.map(Self.json)),
            "unindexed": .array(unindexed.map(Self.json)),
        ])
    }

    private func count(_ value: Int) -> JSONValue { .int(Int64(value)) }

    /// `total / count / scale`, to one decimal; 0 when nothing was counted.
    private static func mean(_ total: Int64, _ count: Int, scale: Double) -> Double {
        guard count > 0 else { return 0 }
        return (Double(total) / Double(count) / scale * 10).rounded() / 10
    }

    private static func json(_ entry: QueryStats.Entry) -> JSONValue {
        var members = [JSONMember("path", .string(entry.path)), JSONMember("query", .string(entry.query))]
        if let maxMicros = entry.maxMicros { members.append(JSONMember("maxMicros", .int(maxMicros))) }
        if let lastMicros = entry.lastMicros { members.append(JSONMember("lastMicros", .int(lastMicros))) }
        if let indexOn = entry.indexOn { members.append(JSONMember("indexOn", .string(indexOn))) }
        if let refused = entry.refused { members.append(JSONMember("refused", .bool(refused))) }
        members.append(JSONMember("count", .int(Int64(entry.count))))
        members.append(JSONMember("lastSeen", .int(entry.lastSeen)))
        return .object(members)
    }
}
