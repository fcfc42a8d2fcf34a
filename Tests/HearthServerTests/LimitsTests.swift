import Foundation
import HearthJSON
import HearthServer
import XCTest

/// The protection limits of docs/security.md ("Limits"), each hit over real connections: the error it
/// answers, and that nothing was lost or half-applied.
final class LimitsTests: XCTestCase {
    func testSubscriptionsPerConnection() async throws {
        try await withSecureServer(secureConfiguration { $0.protection.maxSubscriptionsPerConnection = 2 }) { server in
            let client = try TestClient(port: server.port)
            XCTAssertNotNil(try client.request(#"{"op":"subscribe","path":"/a"}"#)["sub"])
            let second = try XCTUnwrap(try client.request(#"{"op":"subscribe","path":"/b"}"#)["sub"])
            XCTAssertEqual(try client.request(#"{"op":"subscribe","path":"/c"}"#).errorCode, "overloaded")
            XCTAssertEqual(try client.request(.object(["op": "unsubscribe", "sub": second]))["ok"], .bool(true))
            XCTAssertNotNil(try client.request(#"{"op":"subscribe","path":"/c"}"#)["sub"])
        }
    }

    func testWriteRateLimitRefusesWithRetryAfterAndAppliesNothingOfARefusedWrite() async throws {
        try await withSecureServer(secureConfiguration { $0.protection.maxWritesPerSecondPerConnection = 5 }) {
            server in
            let client = try TestClient(port: server.port)
            // 30 pipelined writes: a burst of 10 passes, the rest are refused.
            let lines = (0..<30).map { #"{"op":"set","id":\#($0),"path":"/w/k\#($0)","value":\#($0)}"# }
            try client.sendRaw(Array((lines.joined(separator: "\n") + "\n").utf8))
            var accepted: Set<String> = []
            var refused = 0
            for _ in 0..<30 {
                let response = try client.readResponse()
                if response["ok"] == .bool(true) {
                    accepted.insert("k\(response["id"]?.int64Value ?? -1)")
                } else {
                    XCTAssertEqual(response.errorCode, "overloaded")
                    XCTAssertNotNil(response["error"]?["retryAfterMs"]?.int64Value)
                    refused += 1
                }
            }
            XCTAssertGreaterThan(refused, 0)
            XCTAssertGreaterThanOrEqual(accepted.count, 10)
            let stored = try client.request(#"{"op":"get","path":"/w","shallow":true}"#)["value"]
            XCTAssertEqual(Set(stored?.objectMembers?.map(\.key) ?? []), accepted)
        }
    }

    func testMaxConnectionsRefusesWithAnErrorEvent() async throws {
        try await withSecureServer(secureConfiguration { $0.protection.maxConnections = 2 }) { server in
            let a = try TestClient(port: server.port)
            let b = try TestClient(port: server.port)
            let c = try TestClient(port: server.port, readHello: false)
            let refusal = try c.readJSON()
            XCTAssertEqual(refusal["event"], .string("error"))
            XCTAssertEqual(refusal.errorCode, "overloaded")
            XCTAssertTrue(c.waitForClose(timeout: 5))
            XCTAssertEqual(try a.request(#"{"op":"ping"}"#)["ok"], .bool(true))
            b.close()
            try await waitUntil { (try? TestClient(port: server.port).request(#"{"op":"ping"}"#)["ok"]) == .bool(true) }
        }
    }

    func testAuthTimeoutClosesConnectionsThatNeverAuthenticate() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":"auth != null"}}"#)
        try await withSecureServer(
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.protection.authTimeoutSeconds = 1
            }
        ) { server in
            let idle = try TestClient(port: server.port)
            let signedIn = try TestClient(port: server.port)
            try signedIn.authAdmin()
            let event = try idle.readJSON(timeout: 5)
            XCTAssertEqual(event["event"], .string("error"))
            XCTAssertEqual(event.errorCode, "unauthenticated")
            XCTAssertTrue(idle.waitForClose(timeout: 5))
            try await Task.sleep(nanoseconds: 1_200_000_000)
            XCTAssertEqual(try signedIn.request(#"{"op":"get","path":"/"}"#)["ok"], .bool(true))
        }
    }

    func testFailedAuthAttemptsAreThrottledPerAddress() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{}}"#)
        try await withSecureServer(
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.protection.maxFailedAuthPerMinute = 3
            }
        ) {
            server in
            let client = try TestClient(port: server.port)
            for _ in 0..<3 {
                XCTAssertEqual(try client.request(#"{"op":"auth","token":"guess"}"#).errorCode, "invalid_token")
            }
            // From now on even the right secret is refused, from any connection of this address.
            let other = try TestClient(port: server.port)
            let throttled = try other.request(#"{"op":"auth","token":"\#(TestSecrets.admin)"}"#)
            XCTAssertEqual(throttled.errorCode, "overloaded")
            XCTAssertGreaterThan(throttled["error"]?["retryAfterMs"]?.int64Value ?? 0, 0)
            XCTAssertEqual(server.securityCounts.failedAuths, 3)
        }
    }
}
