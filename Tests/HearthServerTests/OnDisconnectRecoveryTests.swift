import Foundation
import HearthJSON
import HearthServer
import XCTest

/// The onDisconnect operations recovered after a crash run as the identity that registered them,
/// checked by the rules against the data at the moment they run
/// (docs/security.md, "Decisions where the contract was silent").
///
/// The crash is a copy of the data directory taken while the server runs: every acknowledged
/// record has been written to the log by then, which is exactly what `kill -9` leaves behind
/// (the process tests in `PresenceCrashTests` kill a real `hearthd`).
final class OnDisconnectRecoveryTests: XCTestCase {
    let rules = """
        {"rules": {
          ".read": "auth != null",
          "presence": {"$uid": {".write": "auth != null && auth.uid == $uid && root.child('banned/' + auth.uid).val() != true"}},
          "banned": {".write": false},
          "adminOnly": {".write": false}
        }}
        """

    func testRecoveredRegistrationsRunAsTheIdentityThatRegisteredThem() async throws {
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        let image = temporaryDataDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: rulesFile)
            try? FileManager.default.removeItem(atPath: image)
        }
        let configuration = secureConfiguration { $0.rulesFile = rulesFile }
        try await withSecureServer(clock: clock, configuration) { server in
            // Alice's token expires in a minute; the server restarts an hour later.
            let alice = try TestClient(port: server.port)
            try alice.request(
                .object(
                    [
                        "op": "auth",
                        "token": .string(try await testToken(uid: "alice", now: clock.now, ttlSeconds: 60)),
                    ]))
            try PresenceCrashTests.ok(alice, #"{"op":"set","path":"/presence/alice","value":"online"}"#)
            try PresenceCrashTests.ok(
                alice, #"{"op":"onDisconnect","action":"set","path":"/presence/alice","value":"offline"}"#)
            // Bob may register, but is banned before it runs: denied then, and dropped.
            let bob = try TestClient(port: server.port)
            try bob.request(.object(["op": "auth", "token": .string(try await testToken(uid: "bob", now: clock.now))]))
            try PresenceCrashTests.ok(
                bob, #"{"op":"onDisconnect","action":"set","path":"/presence/bob","value":"offline"}"#)
            // Unauthenticated: may not write anywhere, so may not register.
            let anonymous = try TestClient(port: server.port)
            XCTAssertEqual(
                try anonymous.request(#"{"op":"onDisconnect","action":"set","path":"/presence/x","value":1}"#)
                    .errorCode, "permission_denied")
            // An admin stays an admin: rules are skipped for its operation.
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            try PresenceCrashTests.ok(
                admin,
                #"{"op":"onDisconnect","action":"set","path":"/adminOnly/ran","value":{".sv":"timestamp"}}"#)
            try PresenceCrashTests.ok(admin, #"{"op":"set","path":"/banned/bob","value":true}"#)
            try Self.copyDirectory(configuration.dataDirectory, to: image)
            withExtendedLifetime((alice, bob, anonymous)) {}
        }

        clock.now += 3_600_000
        var recovered = configuration
        recovered.dataDirectory = image
        let first = try await Self.state(recovered, clock: clock)
        XCTAssertEqual(first.value["presence"]?["alice"], "offline", "alice's registration ran as alice")
        XCTAssertNil(first.value["presence"]?["bob"], "bob is banned: his registration is denied when it runs")
        XCTAssertEqual(first.value["adminOnly"]?["ran"], .int(clock.now), "the admin's registration ran")
        // Bob's denied registration is dropped, never retried: a restart runs nothing.
        clock.now += 1000
        let second = try await Self.state(recovered, clock: clock)
        XCTAssertEqual(second.rev, first.rev)
        XCTAssertEqual(second.value, first.value)
    }

    /// Starts a server with `configuration` (keeping its data directory), reads the whole tree
    /// as an admin, and shuts it down.
    static func state(
        _ configuration: ServerConfiguration, clock: TestClock
    ) async throws -> (value: JSONValue, rev: Int64) {
        let server = try await HearthServer.start(configuration: configuration, logger: quietLogger, clock: clock.read)
        do {
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            let response = try admin.request(#"{"op":"get","path":"/"}"#)
            await server.shutdown()
            return (response["value"] ?? .null, try XCTUnwrap(response["rev"]?.int64Value))
        } catch {
            await server.shutdown()
            throw error
        }
    }

    /// Copies the files of a data directory (all but its lock).
    static func copyDirectory(_ source: String, to target: String) throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: target, withIntermediateDirectories: true)
        for name in try manager.contentsOfDirectory(atPath: source) where name != "LOCK" {
            try manager.copyItem(atPath: source + "/" + name, toPath: target + "/" + name)
        }
    }
}
