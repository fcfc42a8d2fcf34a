import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Rules in force over real connections (docs/security.md, "Where the rules are checked" and
/// "Rules set at run time"): subscriptions cancelled when the rules, the identity or the data
/// their read rule looks at change; onDisconnect checked when it runs; the rules lifecycle
/// (setRules written back, reload, invalid rules kept out); simulate; admin-only operations.
final class RulesEnforcementTests: XCTestCase {
    /// A room readable by its members, as listed under /members/<room>/<uid>.
    let roomRules = """
        // Chat rooms: members read, anyone signed in writes their own membership.
        {"rules": {
          "rooms": {"$room": {".read": "root.child('members/' + $room + '/' + auth.uid).exists()", ".write": "auth != null"}},
          "members": {"$room": {"$uid": {".write": "auth.uid == $uid", ".read": true}}},
          "open": {".read": true, ".write": true}
        }}
        """

    func testSubscriptionCancelledWhenTheDataItsRuleReadsChanges() async throws {
        let rulesFile = try temporaryFile(roomRules)
        let clock = TestClock()
        try await withSecureServer(clock: clock, secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let alice = try TestClient(port: server.port)
            try alice.request(
                .object(["op": "auth", "token": .string(try await testToken(uid: "alice", now: clock.now))]))
            XCTAssertEqual(try alice.request(#"{"op":"subscribe","path":"/rooms/r1"}"#).errorCode, "permission_denied")
            XCTAssertEqual(
                try alice.request(#"{"op":"set","path":"/members/r1/alice","value":true}"#)["ok"], .bool(true))
            let sub = try XCTUnwrap(try alice.request(#"{"op":"subscribe","path":"/rooms/r1"}"#)["sub"])
            XCTAssertEqual(try alice.request(#"{"op":"set","path":"/rooms/r1/m1","value":"hi"}"#)["ok"], .bool(true))
            // Leaving the room revokes the read: a cancel, and no event with later data.
            XCTAssertEqual(try alice.request(#"{"op":"remove","path":"/members/r1/alice"}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try alice.request(#"{"op":"set","path":"/rooms/r1/m2","value":"secret"}"#)["ok"], .bool(true))
            XCTAssertEqual(try alice.request(#"{"op":"ping"}"#)["ok"], .bool(true))
            let cancels = alice.events.filter { $0["event"] == .string("cancel") }
            XCTAssertEqual(cancels.count, 1)
            XCTAssertEqual(cancels.first?["sub"], sub)
            XCTAssertFalse(alice.events.contains { $0.jsonString.contains("secret") }, "\(alice.events)")
        }
    }

    func testSubscriptionCancelledWhenTheIdentityChanges() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{"private":{".read":"auth != null"}}}"#)
        let clock = TestClock()
        try await withSecureServer(clock: clock, secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try TestClient(port: server.port)
            try client.request(
                .object(["op": "auth", "token": .string(try await testToken(uid: "u", now: clock.now))]))
            let sub = try XCTUnwrap(try client.request(#"{"op":"subscribe","path":"/private"}"#)["sub"])
            XCTAssertEqual(try client.request(#"{"op":"unauth"}"#)["ok"], .bool(true))
            let cancel = client.events.first { $0["event"] == .string("cancel") }
            XCTAssertEqual(cancel?["sub"], sub)
            XCTAssertEqual(cancel?.errorCode, "permission_denied")
            // Gone: unsubscribing it finds nothing.
            XCTAssertEqual(try client.request(.object(["op": "unsubscribe", "sub": sub])).errorCode, "not_found")
        }
    }

    /// Accepted rules are kept in the data directory; the rules file is left as it is (it may be
    /// read-only; docs/security.md, "Rules set at run time").
    func testSetRulesCancelsSubscriptionsAndIsKeptInTheDataDirectory() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":true,".write":true}}"#)
        let configuration = secureConfiguration { $0.rulesFile = rulesFile }
        try await withSecureServer(configuration) { server in
            let reader = try TestClient(port: server.port)
            let sub = try XCTUnwrap(try reader.request(#"{"op":"subscribe","path":"/a"}"#)["sub"])
            let admin = try TestClient(port: server.port)
            XCTAssertEqual(
                try reader.request(#"{"op":"setRules","rules":{"rules":{}}}"#).errorCode, "permission_denied")
            try admin.authAdmin()
            let invalid = try admin.request(#"{"op":"setRules","rules":{"rules":{".read":"auth.uid ==="}}}"#)
            XCTAssertEqual(invalid.errorCode, "invalid_rules")
            XCTAssertEqual(try reader.request(#"{"op":"get","path":"/a"}"#)["ok"], .bool(true), "old rules stay")
            let locked = try admin.request(#"{"op":"setRules","rules":{"rules":{".read":false,".write":false}}}"#)
            XCTAssertEqual(locked["ok"], .bool(true))
            XCTAssertEqual(try reader.request(#"{"op":"get","path":"/a"}"#).errorCode, "permission_denied")
            XCTAssertEqual(reader.events.first { $0["event"] == .string("cancel") }?["sub"], sub)
            let kept = try JSONParser.parse(
                Array(
                    try String(contentsOfFile: configuration.dataDirectory + "/rules.accepted.json", encoding: .utf8)
                        .utf8))
            XCTAssertEqual(kept["document"], json(#"{"rules":{".read":false,".write":false}}"#))
            XCTAssertEqual(try admin.request(#"{"op":"getRules"}"#)["rules"], kept["document"])
            let file = try JSONParser.parse(Array(try String(contentsOfFile: rulesFile, encoding: .utf8).utf8))
            XCTAssertEqual(file, json(#"{"rules":{".read":true,".write":true}}"#))
        }
    }

    func testReloadReadsTheFileAndKeepsTheOldRulesWhenItIsInvalid() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{".read":true}}"#)
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try TestClient(port: server.port)
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/"}"#)["ok"], .bool(true))
            try #"{"rules":{".read":"auth != nul"}}"#.write(toFile: rulesFile, atomically: true, encoding: .utf8)
            let failures = await server.reload()
            XCTAssertEqual(failures.count, 1)
            XCTAssert(failures.first?.contains(rulesFile) == true, "\(failures)")
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/"}"#)["ok"], .bool(true))
            try #"{"rules":{".read":false}}"#.write(toFile: rulesFile, atomically: true, encoding: .utf8)
            let failures2 = await server.reload()
            XCTAssertEqual(failures2, [])
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/"}"#).errorCode, "permission_denied")
        }
    }

    func testOnDisconnectIsCheckedAgainWhenItRuns() async throws {
        let rules =
            #"{"rules":{"presence":{"$uid":{".write":"auth.uid == $uid && !root.child('locked').exists()",".read":true}},"locked":{".write":true}}}"#
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(clock: clock, secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            let token = try await testToken(uid: "bob", now: clock.now)
            // Registered while allowed, runs while allowed.
            let first = try TestClient(port: server.port)
            try first.request(.object(["op": "auth", "token": .string(token)]))
            XCTAssertEqual(
                try first.request(#"{"op":"set","path":"/presence/bob","value":"online"}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try first.request(#"{"op":"onDisconnect","action":"set","path":"/presence/bob","value":"offline"}"#)[
                    "ok"],
                .bool(true))
            XCTAssertEqual(
                try first.request(#"{"op":"onDisconnect","action":"set","path":"/presence/eve","value":"x"}"#)
                    .errorCode,
                "permission_denied", "registration is checked")
            first.close()
            try await waitUntil {
                try admin.request(#"{"op":"get","path":"/presence/bob"}"#)["value"] == .string("offline")
            }
            // Registered while allowed, denied by the data when it runs: not applied.
            let second = try TestClient(port: server.port)
            try second.request(.object(["op": "auth", "token": .string(token)]))
            XCTAssertEqual(
                try second.request(#"{"op":"set","path":"/presence/bob","value":"online"}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try second.request(#"{"op":"onDisconnect","action":"remove","path":"/presence/bob"}"#)["ok"],
                .bool(true))
            XCTAssertEqual(try admin.request(#"{"op":"set","path":"/locked","value":true}"#)["ok"], .bool(true))
            let denialsBefore = server.securityCounts.denials
            second.close()
            try await waitUntil { server.securityCounts.denials > denialsBefore }
            XCTAssertEqual(try admin.request(#"{"op":"get","path":"/presence/bob"}"#)["value"], .string("online"))
        }
    }

    func testSimulateSaysWhichRuleDecided() async throws {
        let rulesFile = try temporaryFile(
            #"{"rules":{"posts":{"$id":{".write":"auth != null",".validate":"newData.hasChildren(['title'])"}}}}"#)
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            let allowed = try admin.request(
                #"{"op":"simulate","as":{"uid":"a"},"request":{"op":"set","path":"/posts/1","value":{"title":"t"}}}"#)
            XCTAssertEqual(allowed["allowed"], .bool(true))
            XCTAssertEqual(allowed["rule"]?["expression"], .string("auth != null"))
            let invalid = try admin.request(
                #"{"op":"simulate","as":{"uid":"a"},"request":{"op":"set","path":"/posts/1","value":{"body":"b"}}}"#)
            XCTAssertEqual(invalid["allowed"], .bool(false))
            XCTAssertEqual(invalid["rule"]?["expression"], .string("newData.hasChildren(['title'])"))
            let anonymous = try admin.request(
                #"{"op":"simulate","as":null,"request":{"op":"set","path":"/posts/1","value":{"title":"t"}}}"#)
            XCTAssertEqual(anonymous["allowed"], .bool(false))
            // Nothing was written.
            XCTAssertEqual(try admin.request(#"{"op":"get","path":"/posts"}"#)["value"], .null)
            let user = try TestClient(port: server.port)
            XCTAssertEqual(
                try user.request(#"{"op":"simulate","request":{"op":"get","path":"/"}}"#).errorCode, "permission_denied"
            )
        }
    }

    func testDeniedUpdateWritesNothingAndDeniedReadShowsNothing() async throws {
        let rulesFile = try temporaryFile(#"{"rules":{"a":{".write":true,".read":true},"b":{".write":false}}}"#)
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try TestClient(port: server.port)
            let denied = try client.request(#"{"op":"update","path":"/","values":{"a/x":1,"b/y":2}}"#)
            XCTAssertEqual(denied.errorCode, "permission_denied")
            XCTAssertEqual(denied["error"]?["message"], .string("update denied at /"))
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/a"}"#)["value"], .null)
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/"}"#).errorCode, "permission_denied")
        }
    }
}

/// Polls `condition` until it holds (at most 10 s).
func waitUntil(_ condition: () throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
        if try condition() { return }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
    XCTFail("condition not met within 10 s")
}
