import Foundation
import HearthJSON
import XCTest

/// Issue #18: onDisconnect registrations survive a `kill -9` of the real `hearthd`, run exactly
/// once when it starts again, and never run again after a further crash.
final class PresenceCrashTests: XCTestCase {
    func testKillNineRunsEachPendingRegistrationExactlyOnce() throws {
        let binary = try HearthdProcess.binaryURL()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hearth-presence-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        var server = try HearthdProcess.start(binary: binary, dataDir: dataDir.path)
        var running: HearthdProcess? = server
        defer { running?.kill9() }

        let setup = try TestClient(port: server.port)
        try Self.ok(setup, #"{"op":"update","path":"/","values":{"visits":10,"closedRuns":0}}"#)
        setup.close()
        // A set: the seeds' presence pattern.
        let alice = try TestClient(port: server.port)
        try Self.ok(alice, #"{"op":"set","path":"/presence/alice","value":"online"}"#)
        try Self.ok(alice, #"{"op":"onDisconnect","action":"set","path":"/presence/alice","value":"offline"}"#)
        // An update with a server timestamp.
        let bob = try TestClient(port: server.port)
        try Self.ok(
            bob,
            #"{"op":"onDisconnect","action":"update","path":"/status/bob","values":{"state":"offline","lastSeen":{".sv":"timestamp"}}}"#
        )
        // An increment: running twice would show.
        let carol = try TestClient(port: server.port)
        try Self.ok(carol, #"{"op":"onDisconnect","action":"set","path":"/visits","value":{".sv":{"increment":1}}}"#)
        // Registered, then cancelled: never runs.
        let dave = try TestClient(port: server.port)
        try Self.ok(dave, #"{"op":"onDisconnect","action":"set","path":"/cancelled/dave","value":"ran"}"#)
        try Self.ok(
            dave, #"{"op":"onDisconnect","action":"update","path":"/cancelled","values":{"x":"ran","y":"ran"}}"#)
        try Self.ok(dave, #"{"op":"onDisconnect","action":"cancel","path":"/cancelled"}"#)
        // Its connection closes cleanly before the crash: it runs then, and never again.
        let erin = try TestClient(port: server.port)
        try Self.ok(erin, #"{"op":"onDisconnect","action":"set","path":"/closedRuns","value":{".sv":{"increment":1}}}"#)
        erin.close()
        let observer = try TestClient(port: server.port)
        try Self.waitFor(observer, "/closedRuns", .int(1))
        XCTAssertEqual(try observer.request(#"{"op":"get","path":"/presence/alice"}"#)["value"], "online")
        let killedAt = Int64(Date().timeIntervalSince1970 * 1000)
        // The crash, while alice, bob, carol and dave are still connected.
        withExtendedLifetime((alice, bob, carol, dave)) { server.kill9() }
        running = nil

        server = try HearthdProcess.start(binary: binary, dataDir: dataDir.path)
        running = server
        let afterRecovery = try Self.root(port: server.port)
        let value = afterRecovery.value
        XCTAssertEqual(value["presence"]?["alice"], "offline", "a ghost survived the crash")
        XCTAssertEqual(value["status"]?["bob"]?["state"], "offline")
        let lastSeen = try XCTUnwrap(value["status"]?["bob"]?["lastSeen"]?.int64Value)
        XCTAssertGreaterThanOrEqual(lastSeen, killedAt, "the server timestamp is resolved when it runs")
        XCTAssertEqual(value["visits"], .int(11), "the increment ran exactly once")
        XCTAssertNil(value["cancelled"], "a cancelled registration ran")
        XCTAssertEqual(value["closedRuns"], .int(1), "a registration that had run ran again")

        // A second crash right after recovery runs nothing twice.
        server.kill9()
        running = nil
        server = try HearthdProcess.start(binary: binary, dataDir: dataDir.path)
        running = server
        let afterSecond = try Self.root(port: server.port)
        XCTAssertEqual(afterSecond.value, value)
        XCTAssertEqual(afterSecond.rev, afterRecovery.rev, "nothing ran after the second crash")
        try server.terminate()
        running = nil
    }

    // MARK: Helpers

    static func ok(_ client: TestClient, _ line: String) throws {
        let response = try client.request(line)
        guard response["ok"] == .bool(true) else {
            throw TestClient.Failure(description: "\(line) failed: \(response)")
        }
    }

    static func root(port: Int) throws -> (value: JSONValue, rev: Int64) {
        let client = try TestClient(port: port)
        defer { client.close() }
        let response = try client.request(#"{"op":"get","path":"/"}"#)
        return (response["value"] ?? .null, try XCTUnwrap(response["rev"]?.int64Value))
    }

    /// Polls `path` until it holds `expected` (a disconnect runs its queue asynchronously).
    static func waitFor(_ client: TestClient, _ path: String, _ expected: JSONValue) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if try client.request(#"{"op":"get","path":"\#(path)"}"#)["value"] == expected { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTFail("\(path) never became \(expected)")
    }
}
