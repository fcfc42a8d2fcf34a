import Foundation
import HearthCore
import HearthJSON
import HearthStorage
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import XCTest

@testable import HearthEngine
@testable import HearthServer

/// Health, metrics and stats (`/.well-known/hearth/...`), asked of the endpoints directly while
/// clients talk to the real server over TCP.
final class ObservabilityTests: XCTestCase {
    func testHealthIsOkOnAHealthyServerAndOtherPathsAreNotWellKnown() async throws {
        try await withLiveServer { server in
            let response = try await wellKnownResponse(server.wellKnown.respond(to: WellKnownEndpoints.healthPath))
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
            let body = try JSONParser.parse(response.bodyText)
            XCTAssertEqual(body["status"], .string("ok"))
            XCTAssertEqual(body["server"], .string(server.configuration.serverName))
            XCTAssertEqual(body["rev"], .int(0))
            // A query string is ignored; anything else under or beside /.well-known/hearth/ is not ours.
            let withQuery = try await wellKnownResponse(server.wellKnown.respond(to: "/.well-known/hearth/health?x=1"))
            XCTAssertEqual(withQuery.status, 200)
            XCTAssertNil(server.wellKnown.respond(to: "/.well-known/hearth/other"))
            XCTAssertNil(server.wellKnown.respond(to: "/.well-known/hearth/health/"))
            XCTAssertNil(server.wellKnown.respond(to: "/users/ada"))
        }
    }

    func testHealthIsUnavailableWithTheReasonOnceTheStorageFailed() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = FailingDisk.configuration(directory)
        let disk = FailingDisk()
        let server = try await HearthServer.start(configuration: configuration, fileSystem: disk, logger: quietLogger)
        do {
            let c = try TestClient(port: server.port)
            XCTAssertEqual(try c.request(#"{"op":"set","path":"/k","value":1}"#)["rev"], .int(1))
            disk.failWrites(true)
            XCTAssertEqual(try c.request(#"{"op":"set","path":"/k","value":2}"#).errorCode, "unavailable")

            let health = try await wellKnownResponse(server.wellKnown.respond(to: WellKnownEndpoints.healthPath))
            XCTAssertEqual(health.status, 503)
            let body = try JSONParser.parse(health.bodyText)
            XCTAssertEqual(body["status"], .string("unavailable"))
            let reason = try XCTUnwrap(body["reason"]?.stringValue)
            XCTAssertTrue(reason.contains("storage failed"), reason)
            XCTAssertTrue(reason.contains("write"), reason)

            let metrics = try await metricsText(server)
            XCTAssertEqual(sample(metrics, "hearth_storage_failed"), 1)
            XCTAssertEqual(sample(metrics, #"hearth_request_errors_total{op="set",code="unavailable"}"#), 1)
            let stats = try await statsJSON(server)
            XCTAssertEqual(stats["storage"]?["failed"], .bool(true))
            XCTAssertNotEqual(stats["storage"]?["failure"], .null)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    func testHealthIsUnavailableWhileTheEngineDoesNotTurn() async throws {
        try await withLiveServer { server in
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let endpoints = WellKnownEndpoints(
                engine: server.engine, configuration: server.configuration, security: server.security,
                eventLoops: group, healthTimeout: .milliseconds(200))
            // The engine's only thread is busy for a second.
            server.engine.loop.execute { Thread.sleep(forTimeInterval: 1) }
            let started = Date()
            let stuck = try await wellKnownResponse(endpoints.respond(to: WellKnownEndpoints.healthPath))
            XCTAssertLessThan(Date().timeIntervalSince(started), 0.9)
            XCTAssertEqual(stuck.status, 503)
            XCTAssertEqual(
                try JSONParser.parse(stuck.bodyText)["reason"],
                .string("the engine did not answer within 200 ms (stuck or overloaded)"))
            // Stats do not wait for the engine.
            let stats = try await wellKnownResponse(endpoints.respond(to: WellKnownEndpoints.statsPath))
            XCTAssertEqual(stats.status, 200)
            // Once it turns again, the server is healthy.
            try await Task.sleep(for: .seconds(1))
            let healthy = try await wellKnownResponse(endpoints.respond(to: WellKnownEndpoints.healthPath))
            XCTAssertEqual(healthy.status, 200)
            try await group.shutdownGracefully()
        }
    }

    func testMetricsCountTheWritesRequestsErrorsAndEventsOverTCP() async throws {
        try await withLiveServer(setting: \.fsync, to: .always) { server in
            let before = try await metricsText(server)
            for name in Self.metricNames {
                XCTAssertTrue(before.contains("# TYPE \(name) "), "no \(name) in:\n\(before)")
            }
            XCTAssertEqual(sample(before, "hearth_writes_total"), 0)

            let listener = try TestClient(port: server.port)
            try listener.request(#"{"op":"subscribe","path":"/counters"}"#)
            _ = try listener.readJSON()  // the initial value event
            let writer = try TestClient(port: server.port)
            for i in 1...5 {
                XCTAssertEqual(
                    try writer.request(#"{"op":"set","path":"/counters/a","value":\#(i)}"#)["rev"], .int(Int64(i)))
            }
            for _ in 1...5 { _ = try listener.readJSON() }
            try writer.request(#"{"op":"get","path":"/counters"}"#)
            XCTAssertEqual(try writer.request(#"{"op":"unsubscribe","sub":99}"#).errorCode, "not_found")
            try writer.send("this is not JSON")
            XCTAssertEqual(try writer.readResponse().errorCode, "bad_request")

            let after = try await metricsText(server)
            XCTAssertEqual(sample(after, "hearth_writes_total"), 5)
            XCTAssertEqual(sample(after, "hearth_rev"), 5)
            XCTAssertEqual(sample(after, #"hearth_requests_total{op="set"}"#), 5)
            XCTAssertEqual(sample(after, #"hearth_requests_total{op="get"}"#), 1)
            XCTAssertEqual(sample(after, #"hearth_requests_total{op="subscribe"}"#), 1)
            XCTAssertEqual(sample(after, #"hearth_request_errors_total{op="unsubscribe",code="not_found"}"#), 1)
            XCTAssertEqual(sample(after, #"hearth_requests_total{op="rejected"}"#), 1)
            XCTAssertEqual(sample(after, #"hearth_request_errors_total{op="rejected",code="bad_request"}"#), 1)
            // The subscription's first value and one value event per write.
            XCTAssertEqual(sample(after, "hearth_events_total"), 6)
            XCTAssertEqual(sample(after, #"hearth_connections{protocol="tcp"}"#), 2)
            XCTAssertEqual(sample(after, "hearth_subscriptions"), 1)
            XCTAssertEqual(sample(after, "hearth_views"), 1)
            // fsync always: one fsync per batch of writes at least.
            XCTAssertGreaterThanOrEqual(sample(after, "hearth_fsync_duration_seconds_count") ?? 0, 1)
            XCTAssertGreaterThan(sample(after, "hearth_wal_bytes") ?? 0, 0)
            XCTAssertGreaterThanOrEqual(sample(after, "hearth_engine_turn_duration_seconds_count") ?? 0, 8)

            listener.close()
            writer.close()
            try await waitUntil { try await sample(metricsText(server), #"hearth_connections{protocol="tcp"}"#) == 0 }
            let closed = try await metricsText(server)
            XCTAssertEqual(sample(closed, "hearth_subscriptions"), 0)
            XCTAssertEqual(sample(closed, "hearth_views"), 0)
        }
    }

    func testStatsHaveTheirFieldsAndListAnUnindexedQuery() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/facts/dinosaurs","value":{"a":{"height":1},"b":{"height":2}}}"#)
            let stats0 = try await statsJSON(server)
            XCTAssertEqual(stats0["queries"]?["unindexed"], .array([]))
            XCTAssertNotNil(
                try c.request(#"{"op":"get","path":"/facts/dinosaurs","query":{"orderBy":"height"}}"#)["warning"])
            try c.request(#"{"op":"get","path":"/facts/dinosaurs","query":{"orderBy":"height","limitToFirst":1}}"#)

            let stats = try await statsJSON(server)
            XCTAssertEqual(stats["server"]?["name"], .string(server.configuration.serverName))
            XCTAssertEqual(stats["server"]?["version"], .string(hearthVersion))
            XCTAssertNotNil(stats["server"]?["uptimeSeconds"]?.int64Value)
            XCTAssertEqual(stats["rev"], .int(1))
            XCTAssertEqual(stats["connections"]?["tcp"], .int(1))
            XCTAssertEqual(stats["connections"]?["http"], .int(0))
            XCTAssertEqual(stats["sseStreams"], .int(0))
            XCTAssertEqual(stats["subscriptions"], .int(0))
            XCTAssertEqual(stats["views"], .int(0))
            XCTAssertEqual(stats["totals"]?["writes"], .int(1))
            XCTAssertEqual(stats["totals"]?["requests"], .int(3))
            XCTAssertEqual(stats["totals"]?["errors"], .int(0))
            XCTAssertGreaterThanOrEqual(stats["engine"]?["turns"]?.int64Value ?? 0, 3)
            XCTAssertNotNil(stats["engine"]?["meanTurnMicros"]?.doubleValue)
            XCTAssertEqual(stats["storage"]?["fsync"], .string("never"))
            XCTAssertEqual(stats["storage"]?["failed"], .bool(false))
            XCTAssertGreaterThan(stats["storage"]?["walBytes"]?.int64Value ?? 0, 0)
            XCTAssertEqual(stats["rules"]?["enabled"], .bool(false))
            XCTAssertEqual(stats["rules"]?["strictIndexes"], .bool(false))
            XCTAssertEqual(stats["queries"]?["windowSeconds"], .int(600))
            XCTAssertNotNil(stats["queries"]?["slowest"])

            // Both queries have the same location and order: one entry, seen twice.
            guard case .array(let unindexed)? = stats["queries"]?["unindexed"] else {
                return XCTFail("no unindexed list in \(stats.jsonString)")
            }
            XCTAssertEqual(unindexed.count, 1, stats.jsonString)
            XCTAssertEqual(unindexed.first?["path"], .string("/facts/dinosaurs"))
            XCTAssertEqual(unindexed.first?["query"], .string(#"{"orderBy":"height"}"#))
            XCTAssertEqual(unindexed.first?["indexOn"], .string("height"))
            XCTAssertEqual(unindexed.first?["refused"], .bool(false))
            XCTAssertEqual(unindexed.first?["count"], .int(2))
            XCTAssertNotNil(unindexed.first?["lastSeen"]?.int64Value)
        }
    }

    func testAQueryRefusedUnderStrictIndexesIsListedAsRefused() async throws {
        try await withLiveServer(setting: \.strictIndexes, to: true) { server in
            let c = try TestClient(port: server.port)
            let refused = try c.request(#"{"op":"get","path":"/scores","query":{"orderBy":"$value"}}"#)
            XCTAssertEqual(refused.errorCode, "index_not_defined")
            let stats = try await statsJSON(server)
            XCTAssertEqual(stats["rules"]?["strictIndexes"], .bool(true))
            guard case .array(let unindexed)? = stats["queries"]?["unindexed"] else {
                return XCTFail("no unindexed list in \(stats.jsonString)")
            }
            XCTAssertEqual(unindexed.first?["path"], .string("/scores"))
            XCTAssertEqual(unindexed.first?["indexOn"], .string(".value"))
            XCTAssertEqual(unindexed.first?["refused"], .bool(true))
            let metrics = try await metricsText(server)
            XCTAssertEqual(sample(metrics, #"hearth_request_errors_total{op="get",code="index_not_defined"}"#), 1)
        }
    }

    /// The slow list keeps the slowest of the window, one entry per location and query.
    func testQueryStatsKeepTheSlowestQueriesOfTheWindow() throws {
        let now = NIOLockedValueBox<Int64>(1_000_000)
        let stats = QueryStats(
            slowThreshold: .milliseconds(1), windowMilliseconds: 60_000, capacity: 2,
            clock: { now.withLockedValue { $0 } })
        let limits = Limits.default
        func query(_ text: String) throws -> QuerySpec { try QuerySpec(json: json(text), limits: limits) }
        let a = try query(#"{"orderBy":"$key","limitToFirst":1}"#)
        let b = try query(#"{"orderBy":"$key","limitToFirst":2}"#)
        let c = try query(#"{"orderBy":"$key","limitToFirst":3}"#)
        let path = try Path.parse("/items", limits: limits)

        stats.queryFinished(a, at: path, duration: .microseconds(999))  // fast: not recorded
        XCTAssertEqual(stats.report().slowest, [])
        stats.queryFinished(a, at: path, duration: .milliseconds(2))
        stats.queryFinished(a, at: path, duration: .milliseconds(3))
        stats.queryFinished(b, at: path, duration: .milliseconds(5))
        // Full: c is slower than a (3 ms), so it takes a's place; then a faster one is dropped.
        stats.queryFinished(c, at: path, duration: .milliseconds(4))
        stats.queryFinished(a, at: path, duration: .milliseconds(2))
        let report = stats.report().slowest
        XCTAssertEqual(report.map(\.query), [b.json.jsonString, c.json.jsonString])
        XCTAssertEqual(report.map(\.maxMicros), [5000, 4000])
        XCTAssertEqual(report.first?.path, "/items")
        XCTAssertEqual(report.first?.lastSeen, 1_000_000)

        stats.queryFinished(b, at: path, duration: .milliseconds(1))
        let again = stats.report().slowest.first
        XCTAssertEqual(again?.count, 2)
        XCTAssertEqual(again?.maxMicros, 5000)
        XCTAssertEqual(again?.lastMicros, 1000)

        // Not seen for the window: gone.
        now.withLockedValue { $0 += 60_001 }
        XCTAssertEqual(stats.report().slowest, [])
    }

    // MARK: Helpers

    /// Every metric the server registers.
    static let metricNames = [
        "hearth_connections", "hearth_sse_streams", "hearth_subscriptions", "hearth_views", "hearth_requests_total",
        "hearth_writes_total", "hearth_events_total", "hearth_engine_turn_duration_seconds",
        "hearth_engine_turn_submissions", "hearth_fsync_duration_seconds", "hearth_wal_bytes", "hearth_snapshot_bytes",
        "hearth_rev", "hearth_rules_denials_total", "hearth_auth_failures_total", "hearth_limit_hits_total",
        "hearth_storage_failed", "hearth_uptime_seconds",
    ]

    /// The metrics once everything already answered has been counted (the engine publishes a
    /// turn's counts right after handing out its answers).
    private func metricsText(_ server: HearthServer) async throws -> String {
        try await server.engine.barrier().get()
        let response = try await wellKnownResponse(server.wellKnown.respond(to: WellKnownEndpoints.metricsPath))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentType, "text/plain; version=0.0.4; charset=utf-8")
        return response.bodyText
    }

    private func statsJSON(_ server: HearthServer) async throws -> JSONValue {
        try await server.engine.barrier().get()
        let response = try await wellKnownResponse(server.wellKnown.respond(to: WellKnownEndpoints.statsPath))
        XCTAssertEqual(response.status, 200)
        return try JSONParser.parse(response.bodyText)
    }

    /// The value of the sample `series` (name and labels exactly as rendered), nil when absent.
    private func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    private func waitUntil(timeout: Double = 10, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTFail("condition not met within \(timeout) s")
    }
}

/// The response `future` completes with; fails the test when there is none (not a well-known path).
private func wellKnownResponse(
    _ future: EventLoopFuture<WellKnownResponse>?, file: StaticString = #filePath, line: UInt = #line
) async throws -> WellKnownResponse {
    try await XCTUnwrap(future, "not a well-known path", file: file, line: line).get()
}
