import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Credentials and rules on the HTTP API: the same decision point as the line protocol
/// (docs/REST.md, "Credentials"; docs/security.md, "HTTP requests").
final class HTTPSecurityTests: XCTestCase {
    private let rules = #"""
        {"rules":{
          "users":{"$uid":{".read":"auth != null && auth.uid == $uid",".write":"auth != null && auth.uid == $uid"}},
          "public":{".read":true}
        }}
        """#

    func testCredentialsIdentifyTheCallerAndRulesDecide() async throws {
        let rulesFile = try temporaryFile(rules)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        let clock = TestClock()
        try await withSecureServer(clock: clock, secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let alice = try await testToken(uid: "alice", now: clock.now)

            let anonymous = try client.request("PUT", "/users/alice/name.json", body: #""Alice""#)
            XCTAssertEqual(anonymous.status, 401)
            XCTAssertEqual(anonymous.error, "Permission denied")

            let bad = try client.request("GET", "/public.json?auth=not-a-token")
            XCTAssertEqual(bad.status, 401)
            XCTAssertEqual(bad.error, "Could not parse auth token.")

            let asAlice = try client.request("PUT", "/users/alice/name.json?auth=\(alice)", body: #""Alice""#)
            XCTAssertEqual(asAlice.status, 200)
            let bearer = try client.request(
                "GET", "/users/alice/name.json", headers: [("Authorization", "Bearer \(alice)")])
            XCTAssertEqual(bearer.text, #""Alice""#)
            let byAccessToken = try client.request("GET", "/users/alice.json?access_token=\(alice)")
            XCTAssertEqual(byAccessToken.json, json(#"{"name":"Alice"}"#))
            // The same keep-alive connection, now without credentials, is anonymous again.
            XCTAssertEqual(try client.request("GET", "/users/alice.json").status, 401)
            XCTAssertEqual(try client.request("GET", "/users/bob.json?auth=\(alice)").status, 401)

            // Admin secret bypasses the rules; auth_variable_override narrows an admin to a user.
            let admin = TestSecrets.admin
            XCTAssertEqual(try client.request("PUT", "/users/bob.json?auth=\(admin)", body: #"{"a":1}"#).status, 200)
            let overridden = try client.request(
                "GET", "/users/bob.json?auth=\(admin)&auth_variable_override=%7B%22uid%22%3A%22alice%22%7D")
            XCTAssertEqual(overridden.status, 401)
            let asBob = try client.request(
                "GET", "/users/bob.json?auth=\(admin)&auth_variable_override=%7B%22uid%22%3A%22bob%22%7D")
            XCTAssertEqual(asBob.json, json(#"{"a":1}"#))

            // Expired tokens are refused, never served as anonymous.
            let expired = try await testToken(uid: "alice", now: clock.now - 7_200_000, ttlSeconds: 60)
            let late = try client.request("GET", "/public.json?auth=\(expired)")
            XCTAssertEqual(late.status, 401)
            XCTAssertEqual(late.error, "Auth token is expired")

            // The rules endpoint is for admins.
            XCTAssertEqual(try client.request("GET", "/.settings/rules.json?auth=\(alice)").status, 401)
            let document = try client.request("GET", "/.settings/rules.json?auth=\(admin)")
            XCTAssertEqual(document.status, 200)
            XCTAssertNotNil(document.json["rules"]?["users"])
        }
    }

    func testStreamIsCancelledWhenTheRulesStopAllowingIt() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{"public":{".read":true},".write":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try stream.openStream("/public.json").status, 200)
            XCTAssertEqual(try stream.nextEvent()?.name, "put")
            let denied = try HTTPTestClient(port: server.httpPort ?? 0).openStream("/private.json")
            XCTAssertEqual(denied.status, 401)

            let admin = try HTTPTestClient(port: server.httpPort ?? 0)
            let replaced = try admin.request(
                "PUT", "/.settings/rules.json?auth=\(TestSecrets.admin)", body: #"{"rules":{".write":true}}"#)
            XCTAssertEqual(replaced.status, 200)
            let cancel = try stream.nextEvent()
            XCTAssertEqual(cancel, HTTPTestClient.Event(name: "cancel", data: #""Permission denied""#))
            XCTAssertNil(try stream.nextEvent())
        }
    }

    func testStreamGetsAuthRevokedWhenItsTokenExpires() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        let clock = TestClock()
        let configuration = secureConfiguration {
            $0.rulesFile = rulesFile
            $0.tokens.clockSkewSeconds = 0
        }
        try await withSecureServer(clock: clock, configuration) { server in
            // A token that expires in about a second (the server's expiry timer runs on real time).
            let token = try await testToken(uid: "alice", now: clock.now - 59_000, ttlSeconds: 60)
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try stream.openStream("/data.json?auth=\(token)").status, 200)
            XCTAssertEqual(try stream.nextEvent()?.name, "put")
            clock.now += 2000
            let revoked = try stream.nextEvent(timeout: 10)
            XCTAssertEqual(revoked, HTTPTestClient.Event(name: "auth_revoked", data: "credential is no longer valid"))
            XCTAssertNil(try stream.nextEvent())
        }
    }

    func testStatsAreForAdminsWhileHealthAndMetricsStayOpen() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":true}}"#)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/health").status, 200)
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/metrics").status, 200)
            let anonymous = try client.request("GET", "/.well-known/hearth/stats")
            XCTAssertEqual(anonymous.status, 401)
            XCTAssertEqual(anonymous.error, "Permission denied")
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/stats?auth=wrong").status, 401)
            let admin = try client.request("GET", "/.well-known/hearth/stats?auth=\(TestSecrets.admin)")
            XCTAssertEqual(admin.status, 200)
            XCTAssertNotNil(admin.json["rev"])
        }
    }

    func testWriteRateLimitIs429WithRetryAfter() async throws {
        try await withSecureServer(secureConfiguration { $0.protection.maxWritesPerSecondPerConnection = 1 }) {
            server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let admin = TestSecrets.admin
            var statuses: [Int] = []
            for i in 0..<4 {
                statuses.append(try client.request("PUT", "/n.json?auth=\(admin)", body: "\(i)").status)
            }
            XCTAssertEqual(statuses.prefix(2), [200, 200])
            XCTAssertTrue(statuses.contains(429), "\(statuses)")
            let limited = try client.request("PUT", "/n.json?auth=\(admin)", body: "9")
            XCTAssertEqual(limited.status, 429)
            XCTAssertNotNil(limited.header("Retry-After"))
        }
    }
}
