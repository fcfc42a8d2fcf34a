import Foundation
import HearthCore
import HearthJSON
import XCTest

@testable import HearthServer

/// Triggers end to end: a real server logs writes, its runner reads them back from the log and
/// POSTs signed events to a real HTTP receiver on loopback.
final class TriggerRunnerTests: XCTestCase {
    static let secret = Array("whsec-trigger-tests-0123456789abcdef".utf8)

    static func trigger(
        _ name: String = "notify", path: String = "/messages/{id}", kinds: Set<TriggerKind> = Set(TriggerKind.allCases),
        port: Int, maxAgeSeconds: Int = 86_400, maxConcurrency: Int = 8
    ) throws -> TriggerSettings {
        var settings = TriggerSettings(
            name: name, pattern: try TriggerPattern(path), kinds: kinds, url: "http://127.0.0.1:\(port)/hook",
            secret: TriggerSecret(secret))
        settings.maxAgeSeconds = maxAgeSeconds
        settings.maxConcurrency = maxConcurrency
        settings.timeoutMilliseconds = 2000
        return settings
    }

    /// Waits until `receiver` has at least `count` requests (or fails after `seconds`).
    static func waitForRequests(
        _ receiver: LoopbackReceiver, count: Int, seconds: Double = 10, file: StaticString = #filePath, line: UInt = #line
    ) async throws -> [LoopbackReceiver.Received] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let requests = receiver.requests
            if requests.count >= count { return requests }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        XCTFail("only \(receiver.requests.count) of \(count) deliveries arrived", file: file, line: line)
        return receiver.requests
    }

    static func bodies(_ requests: [LoopbackReceiver.Received]) throws -> [JSONValue] {
        try requests.map { try JSONParser.parse($0.body) }
    }

    /// Only matching writes are delivered, one event per changed location, with the kind, the
    /// wildcard values, the values before and after, the revision and the writer; each is signed.
    func testMatchingWritesAreDeliveredWithKindsParamsAndValues() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        let settings = try Self.trigger(port: receiver.port, maxConcurrency: 1)
        try await withLiveServer(configure: { $0.triggers = [settings] }) { server in
            let client = try TestClient(port: server.port)
            _ = try client.request(#"{"op":"set","id":1,"path":"/other/x","value":1}"#)
            _ = try client.request(#"{"op":"set","id":2,"path":"/messages/m1","value":{"text":"hi"}}"#)
            _ = try client.request(#"{"op":"update","id":3,"path":"/messages/m1","values":{"text":"hello"}}"#)
            _ = try client.request(#"{"op":"set","id":4,"path":"/messages/m1/text","value":"hello"}"#)
            _ = try client.request(
                #"{"op":"update","id":5,"path":"/messages","values":{"m2":{"text":"two"},"m3":{"text":"three"}}}"#)
            _ = try client.request(#"{"op":"remove","id":6,"path":"/messages/m1"}"#)
            _ = try await Self.waitForRequests(receiver, count: 5)
            try await Task.sleep(nanoseconds: 300_000_000)
            let requests = receiver.requests
            XCTAssertEqual(requests.count, 5, "the unchanged set and the other path deliver nothing")
            guard requests.count == 5 else { return }
            let events = try Self.bodies(requests)
            XCTAssertEqual(events.map { $0["kind"] }, ["create", "update", "create", "create", "delete"])
            XCTAssertEqual(
                events.map { $0["path"] }, ["/messages/m1", "/messages/m1", "/messages/m2", "/messages/m3", "/messages/m1"])
            XCTAssertEqual(events[0]["params"], .object(["id": "m1"]))
            XCTAssertEqual(events[0]["before"], .null)
            XCTAssertEqual(events[0]["after"], .object(["text": "hi"]))
            XCTAssertEqual(events[1]["before"], .object(["text": "hi"]))
            XCTAssertEqual(events[1]["after"], .object(["text": "hello"]))
            XCTAssertEqual(events[4]["before"], .object(["text": "hello"]))
            XCTAssertEqual(events[4]["after"], .null)
            XCTAssertEqual(events.map { $0["rev"] }, [.int(2), .int(3), .int(5), .int(5), .int(6)])
            XCTAssertEqual(events[0]["db"], "default")
            XCTAssertEqual(events[0]["trigger"], "notify")
            XCTAssertEqual(events[0]["id"], "default:notify:2:/messages/m1")
            XCTAssertEqual(events[0]["auth"], .null, "an unauthenticated writer on an open server")
            XCTAssertNotNil(events[0]["timestamp"]?.int64Value)
            for request in requests {
                XCTAssertEqual(request.method, .POST)
                XCTAssertEqual(request.uri, "/hook")
                XCTAssertEqual(request.headers.first(name: "Content-Type"), "application/json")
                let signature = try XCTUnwrap(request.headers.first(name: "Hearth-Signature"))
                let now = Int64(Date().timeIntervalSince1970)
                XCTAssertTrue(
                    TriggerSignature.verify(
                        header: signature, body: request.body, secret: Self.secret, now: now, tolerance: 300))
                XCTAssertFalse(
                    TriggerSignature.verify(
                        header: signature, body: request.body + [0x20], secret: Self.secret, now: now, tolerance: 300),
                    "a tampered body does not verify")
                let id = try JSONParser.parse(request.body)["id"]?.stringValue
                XCTAssertEqual(request.headers.first(name: "Hearth-Event-Id"), id)
            }
        }
    }
}
