import Foundation
import HearthAuth
import HearthJSON
import NIOCore
import XCTest

@testable import HearthServer

/// Limits an attacker must not step around and that must not hit the innocent
/// (docs/security.md "Limits"): the failed-auth throttle against credentials that cannot be
/// guessed, the write limit per address over many connections and both protocols, the
/// connection limit's `Retry-After`, and the cached, optionally protected metrics.
final class AbuseLimitsTests: XCTestCase {
    /// An admin secret long enough (32 bytes or more) to be verified while its sender is throttled.
    static let longAdminSecret = "test-long-admin-secret-0123456789abcdef"

    func testAThrottledAddressStillAcceptsCredentialsThatCannotBeGuessed() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        let clock = TestClock()
        let configuration = secureConfiguration {
            $0.rulesFile = rulesFile
            $0.protection.maxFailedAuthPerMinute = 3
            $0.tokens.adminSecrets = [TestSecrets.admin, Self.longAdminSecret]
        }
        try await withSecureServer(clock: clock, configuration) { server in
            let guesser = try TestClient(port: server.port)
            for _ in 0..<3 {
                XCTAssertEqual(try guesser.request(#"{"op":"auth","token":"guess"}"#).errorCode, "invalid_token")
            }
            let neighbour = try TestClient(port: server.port)
            func auth(_ token: String) throws -> JSONValue {
                try neighbour.request(.object(["op": "auth", "token": .string(token)]))
            }
            func assertThrottled(_ response: JSONValue, _ what: String) {
                XCTAssertEqual(response.errorCode, "overloaded", "\(what): \(response)")
                XCTAssertGreaterThan(response["error"]?["retryAfterMs"]?.int64Value ?? 0, 0, what)
            }
            // A JWT whose signature verifies cannot be guessed: accepted while the address is throttled.
            let token = try await testToken(uid: "alice", now: clock.now)
            XCTAssertEqual(try auth(token)["auth"]?["uid"], .string("alice"))
            // So is an admin secret of 32 bytes or more.
            XCTAssertEqual(try auth(Self.longAdminSecret)["auth"]?["admin"], .bool(true))
            // Anything that could be a guess gets the throttled answer: a short admin secret (even
            // the right one), a wrong long secret, a JWT signed with another key, an expired JWT.
            assertThrottled(try auth(TestSecrets.admin), "short admin secret")
            assertThrottled(try auth(String(Self.longAdminSecret.dropLast()) + "X"), "wrong long secret")
            let forged = try await TokenMinter(secret: "another-secret-of-32-bytes-or-more").mint(
                uid: "alice", claims: .object([]), now: clock.now / 1000, ttlSeconds: 3600)
            assertThrottled(try auth(forged), "forged JWT")
            let expired = try await testToken(uid: "alice", now: clock.now - 7_200_000)
            assertThrottled(try auth(expired), "expired JWT")
            XCTAssertEqual(server.securityCounts.failedAuths, 3)

            // The same over HTTP, from the same (throttled) address.
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try http.request("GET", "/x.json?auth=\(token)").status, 200)
            let stats = try http.request("GET", "/.well-known/hearth/stats?auth=\(Self.longAdminSecret)")
            XCTAssertEqual(stats.status, 200, stats.text)
            for wrong in ["guess", TestSecrets.admin, forged] {
                let refused = try http.request("GET", "/x.json", headers: [("Authorization", "Bearer \(wrong)")])
                XCTAssertEqual(refused.status, 429, refused.text)
                XCTAssertGreaterThanOrEqual(Int(refused.header("Retry-After") ?? "") ?? 0, 1)
            }
        }
    }

    func testTheWriteLimitPerAddressCoversEveryConnectionAndBothProtocols() async throws {
        // 2 writes a second from this address, bursts of 4: a connection per write gains nothing.
        let configuration = secureConfiguration {
            $0.protection.maxWritesPerSecondPerAddress = 2
            $0.protection.limitLoopback = true
        }
        try await withSecureServer(configuration) { server in
            var accepted: Set<String> = []
            var refused = 0
            for i in 0..<12 {
                let client = try TestClient(port: server.port)
                let response = try client.request(#"{"op":"set","path":"/w/k\#(i)","value":\#(i)}"#)
                if response["ok"] == .bool(true) {
                    accepted.insert("k\(i)")
                } else {
                    XCTAssertEqual(response.errorCode, "overloaded", "\(response)")
                    XCTAssertGreaterThan(response["error"]?["retryAfterMs"]?.int64Value ?? 0, 0)
                    XCTAssertTrue(
                        response["error"]?["message"]?.stringValue?.contains("maxWritesPerSecondPerAddress") == true)
                    refused += 1
                }
            }
            XCTAssertGreaterThanOrEqual(accepted.count, 4)
            XCTAssertGreaterThan(refused, 0)
            // The bucket is shared with HTTP: its writes from this address are refused too.
            var httpRefused = 0
            for i in 0..<6 {
                let client = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
                let response = try client.request("PUT", "/h/k\(i).json", body: "\(i)")
                guard response.status == 429 else { continue }
                httpRefused += 1
                XCTAssertGreaterThanOrEqual(Int(response.header("Retry-After") ?? "") ?? 0, 1)
                XCTAssertTrue(response.error?.contains("maxWritesPerSecondPerAddress") == true, response.text)
            }
            XCTAssertGreaterThan(httpRefused, 0)
            // Nothing of a refused write was applied.
            let stored = try TestClient(port: server.port).request(#"{"op":"get","path":"/w","shallow":true}"#)["value"]
            XCTAssertEqual(Set(stored?.objectMembers?.map(\.key) ?? []), accepted)
        }
    }

    func testTheWriteLimitTracksABoundedNumberOfAddresses() throws {
        let limiter = try XCTUnwrap(AddressWriteLimiter(rate: 1, maxAddresses: 64, parts: 4))
        let start = NIODeadline.now()
        XCTAssertNil(limiter.take("203.0.113.1", now: start))
        XCTAssertNil(limiter.take("203.0.113.1", now: start))
        XCTAssertEqual(limiter.take("203.0.113.1", now: start), 1000)
        // Many addresses writing at once: the oldest are dropped, the count stays bounded.
        for i in 0..<10_000 {
            XCTAssertNil(
                limiter.take("10.\(i / 65536).\(i / 256 % 256).\(i % 256)", now: start + .milliseconds(Int64(i))))
            XCTAssertLessThanOrEqual(limiter.count, 64)
        }
        XCTAssertNil(AddressWriteLimiter(rate: 0))
    }

    func testTheWriteLimitPerAddressSparesLoopbackByDefault() async throws {
        try await withSecureServer(secureConfiguration { $0.protection.maxWritesPerSecondPerAddress = 1 }) { server in
            for i in 0..<10 {
                let client = try TestClient(port: server.port)
                XCTAssertEqual(try client.request(#"{"op":"set","path":"/w/k\#(i)","value":1}"#)["ok"], .bool(true))
                let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
                XCTAssertEqual(try http.request("PUT", "/h/k\(i).json", body: "1").status, 200)
            }
        }
    }

    func testTheConnectionLimitAnswersHTTPWith429AndRetryAfter() async throws {
        try await withSecureServer(secureConfiguration { $0.protection.maxConnections = 2 }) { server in
            let a = try TestClient(port: server.port)
            let b = try TestClient(port: server.port)
            let refused = try HTTPTestClient(port: try XCTUnwrap(server.httpPort)).request("GET", "/x.json")
            XCTAssertEqual(refused.status, 429, refused.text)
            XCTAssertGreaterThanOrEqual(Int(refused.header("Retry-After") ?? "") ?? 0, 1)
            XCTAssertTrue(refused.error?.contains("maxConnections") == true, refused.text)
            a.close()
            b.close()
        }
    }

    func testLimitLoopbackAppliesTheConnectionLimitPerAddressToLoopback() async throws {
        let configuration = secureConfiguration {
            $0.protection.maxConnectionsPerAddress = 2
            $0.protection.limitLoopback = true
        }
        try await withSecureServer(configuration) { server in
            let a = try TestClient(port: server.port)
            let b = try TestClient(port: server.port)
            let c = try TestClient(port: server.port, readHello: false)
            XCTAssertEqual(try c.readJSON(timeout: 5).errorCode, "overloaded")
            let refused = try HTTPTestClient(port: try XCTUnwrap(server.httpPort)).request("GET", "/x.json")
            XCTAssertEqual(refused.status, 429, refused.text)
            XCTAssertGreaterThanOrEqual(Int(refused.header("Retry-After") ?? "") ?? 0, 1)
            XCTAssertTrue(refused.error?.contains("maxConnectionsPerAddress") == true, refused.text)
            a.close()
            b.close()
        }
        // Without it, loopback is exempt.
        try await withSecureServer(secureConfiguration { $0.protection.maxConnectionsPerAddress = 2 }) { server in
            let clients = try (0..<4).map { _ in try TestClient(port: server.port) }
            for client in clients { XCTAssertEqual(try client.request(#"{"op":"ping"}"#)["ok"], .bool(true)) }
        }
    }

    func testMetricsAreRenderedAtMostOncePerInterval() async throws {
        try await withSecureServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let scraper = try HTTPTestClient(port: port)
            let writer = try HTTPTestClient(port: port)
            func scrape() throws -> String {
                let response = try scraper.request("GET", "/.well-known/hearth/metrics")
                XCTAssertEqual(response.status, 200)
                return response.text
            }
            // Scrapes around a write within the interval see the same text; a loaded machine may
            // take longer than the interval, so a pair is judged only when it took less.
            var judged = false
            for i in 0..<3 where !judged {
                let started = Date()
                let first = try scrape()
                XCTAssertEqual(try writer.request("PUT", "/m/k\(i).json", body: "1").status, 200)
                let second = try scrape()
                if Date().timeIntervalSince(started) < 0.8 {
                    XCTAssertEqual(first, second)
                    judged = true
                }
                try await Task.sleep(for: .milliseconds(1200))
            }
            XCTAssertTrue(judged, "no two scrapes came within 0.8 s of each other")
            // After the interval the text is rendered again and shows the writes.
            let later = try scrape()
            XCTAssertTrue(
                later.split(separator: "\n").contains { $0.hasPrefix("hearth_writes_total ") && !$0.hasSuffix(" 0") },
                later)
            try await Task.sleep(for: .milliseconds(1200))
            XCTAssertEqual(try writer.request("PUT", "/m/last.json", body: "1").status, 200)
            try await Task.sleep(for: .milliseconds(50))
            XCTAssertNotEqual(try scrape(), later)
        }
    }

    func testMetricsRequireAdminRefusesAnonymousScrapesOnceRulesAreOn() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":true}}"#)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        let clock = TestClock()
        let configuration = secureConfiguration {
            $0.rulesFile = rulesFile
            $0.metricsRequireAdmin = true
        }
        try await withSecureServer(clock: clock, configuration) { server in
            let client = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            let anonymous = try client.request("GET", "/.well-known/hearth/metrics")
            XCTAssertEqual(anonymous.status, 401)
            XCTAssertEqual(anonymous.error, "Permission denied")
            let user = try await testToken(uid: "alice", now: clock.now)
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/metrics?auth=\(user)").status, 401)
            let admin = try client.request(
                "GET", "/.well-known/hearth/metrics", headers: [("Authorization", "Bearer \(TestSecrets.admin)")])
            XCTAssertEqual(admin.status, 200)
            XCTAssertTrue(admin.text.contains("hearth_uptime_seconds"), admin.text)
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/health").status, 200)
        }
    }

    func testMetricsRequireAdminLeavesAnOpenServerOpen() async throws {
        try await withSecureServer(secureConfiguration { $0.metricsRequireAdmin = true }) { server in
            let client = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/metrics").status, 200)
        }
    }
}
