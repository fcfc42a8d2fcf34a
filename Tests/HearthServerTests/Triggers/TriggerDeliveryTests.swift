import HearthCore
import HearthJSON
import NIOPosix
import XCTest

@testable import HearthServer

/// The pieces together: a configured trigger picks its kinds of a write's changes, and its
/// signed POST reaches a receiver that can verify it.
final class TriggerDeliveryTests: XCTestCase {
    private let secret = String(repeating: "k", count: 40)

    private func trigger(_ fields: String, port: Int = 1) throws -> TriggerSettings {
        let text =
            #"[{"name":"notify","path":"/messages/{id}","url":"http://127.0.0.1:\#(port)/hook","#
            + #""secretEnv":"HOOK",\#(fields)}]"#
        let list = try TriggerSettings.parseList(
            try JSONParser.parse(Array(text.utf8)), source: "test", baseDirectory: nil,
            environment: { [secret] in $0 == "HOOK" ? secret : nil })
        return try XCTUnwrap(list.first)
    }

    private func node(_ json: String) throws -> Node {
        var importer = NodeImporter(limits: .default, baseDepth: 0)
        return try importer.importNode(try JSONParser.parse(Array(json.utf8)))
    }

    func testOnlyTheConfiguredKindsAreDelivered() throws {
        let before = try node(#"{"messages":{"a":1,"b":2}}"#)
        let after = try node(#"{"messages":{"b":3,"c":4}}"#)
        let changed = [try Path.parse("/messages")]
        XCTAssertEqual(
            try trigger(#""on":["create"]"#).changes(at: changed, before: before, after: after).map(\.path.description),
            ["/messages/c"])
        XCTAssertEqual(
            try trigger(#""on":["update","delete"]"#).changes(at: changed, before: before, after: after).map(\.kind),
            [.delete, .update])
        XCTAssertEqual(
            try trigger(#""on":["write"]"#).changes(at: changed, before: before, after: after).count, 3)
    }

    func testASignedDeliveryReachesTheReceiverAndVerifies() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        let settings = try trigger(#""headers":{"X-App":"chat"}"#, port: receiver.port)
        let change = try XCTUnwrap(
            settings.changes(
                at: [try Path.parse("/messages/m1")], before: .empty, after: try node(#"{"messages":{"m1":"hi"}}"#)
            ).first)
        let event = TriggerEvent(
            database: "default", trigger: settings.name, change: change, revision: 7, timestamp: 1_765_000_000_000,
            auth: .admin)
        let url = try HTTPURL(settings.url, source: "test", setting: "url")
        let request = settings.request(for: event, url: url, time: 1_765_000_001)
        let response = try await HTTPRequester.send(
            request, tls: nil, group: MultiThreadedEventLoopGroup.singleton, timeout: .seconds(5), maxBytes: 1024)
        XCTAssertEqual(response.status, 200)

        let received = try XCTUnwrap(receiver.requests.first)
        XCTAssertEqual(received.method, .POST)
        XCTAssertEqual(received.uri, "/hook")
        XCTAssertEqual(received.headers.first(name: "Content-Type"), "application/json")
        XCTAssertEqual(received.headers.first(name: "Hearth-Event-Id"), "default:notify:7:/messages/m1")
        XCTAssertEqual(received.headers.first(name: "X-App"), "chat")
        let signature = try XCTUnwrap(received.headers.first(name: "Hearth-Signature"))
        XCTAssertTrue(signature.hasPrefix("t=1765000001,v1="))
        XCTAssertTrue(
            signatureVerifies(
                header: signature, body: received.body, secret: Array(secret.utf8), now: 1_765_000_010, tolerance: 300))
        var tampered = received.body
        tampered[tampered.count - 2] ^= 0x01
        XCTAssertFalse(
            signatureVerifies(
                header: signature, body: tampered, secret: Array(secret.utf8), now: 1_765_000_010, tolerance: 300))
        let body = try JSONParser.parse(received.body)
        XCTAssertEqual(body["kind"], .string("create"))
        XCTAssertEqual(body["params"], .object(["id": .string("m1")]))
        XCTAssertEqual(body["after"], .string("hi"))
        XCTAssertEqual(body["before"], .null)
        XCTAssertEqual(body["rev"], .int(7))
    }
}
