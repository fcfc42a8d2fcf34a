import HearthCore
import HearthJSON
import XCTest

@testable import HearthServer

/// The delivery body's fixed encoding and the `Hearth-Signature` header.
final class TriggerEventTests: XCTestCase {
    private let secret = Array("0123456789abcdef0123456789abcdef".utf8)

    private func node(_ json: String) throws -> Node {
        var importer = NodeImporter(limits: .default, baseDepth: 0)
        return try importer.importNode(try JSONParser.parse(Array(json.utf8)))
    }

    private func event(auth: TriggerAuth = .admin, revision: Int64 = 42) throws -> TriggerEvent {
        let change = TriggerChange(
            path: try Path.parse("/rooms/r1/messages/m9"),
            params: [TriggerParam(name: "room", value: "r1"), TriggerParam(name: "id", value: "m9")],
            kind: .update, before: try node(#"{"text":"hi","n":{".value":1,".priority":3}}"#),
            after: try node(#"{"text":"hé \"x\""}"#))
        return TriggerEvent(
            database: "chat", trigger: "notify", change: change, revision: revision, timestamp: 1_765_000_000_123,
            auth: auth)
    }

    func testTheBodyIsTheFixedShape() throws {
        let body = String(decoding: try event().body(), as: UTF8.self)
        XCTAssertEqual(
            body,
            #"{"id":"chat:notify:42:/rooms/r1/messages/m9","trigger":"notify","db":"chat","path":"/rooms/r1/messages/m9","params":{"room":"r1","id":"m9"},"kind":"update","before":{"n":{".value":1,".priority":3},"text":"hi"},"after":{"text":"hé \"x\""},"rev":42,"timestamp":1765000000123,"auth":{"admin":true}}"#
        )
        XCTAssertEqual(try event().id, try event().id, "the same event has the same id on every retry")
        XCTAssertNotEqual(try event().id, try event(revision: 43).id)
    }

    func testAuthAndAbsentValues() throws {
        let user = try JSONParser.parse(Array(#"{"auth":{"uid":"u1","token":{"sub":"u1","admin":false}}}"#.utf8))
        let token = try XCTUnwrap(user["auth"]?["token"])
        let userBody = try JSONParser.parse(try event(auth: .user(uid: "u1", token: token)).body())
        XCTAssertEqual(userBody["auth"], user["auth"])
        XCTAssertEqual(try JSONParser.parse(try event(auth: .none).body())["auth"], .null)

        let created = TriggerChange(
            path: try Path.parse("/a"), params: [], kind: .create, before: .empty, after: try node("5"))
        let body = try JSONParser.parse(
            TriggerEvent(database: "d", trigger: "t", change: created, revision: 1, timestamp: 2, auth: .none).body())
        XCTAssertEqual(body["before"], .null)
        XCTAssertEqual(body["after"], .int(5))
        XCTAssertEqual(body["params"], .object([]))
    }

    func testTheSignatureIsHMACSHA256OfTimeDotBody() throws {
        let body = try event().body()
        let header = TriggerSignature.header(body: body, secret: secret, time: 1_765_000_000)
        var signed = Array("1765000000.".utf8)
        signed += body
        let expected = TriggerSignature.hmac(signed, secret: secret)
        XCTAssertEqual(header, "t=1765000000,v1=\(TriggerSignature.hex(expected))")
        XCTAssertEqual(TriggerSignature.hex([0x00, 0x0F, 0xA5, 0xFF]), "000fa5ff")
        // RFC 4231, test case 2.
        XCTAssertEqual(
            TriggerSignature.hex(
                TriggerSignature.hmac(Array("what do ya want for nothing?".utf8), secret: Array("Jefe".utf8))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")

        XCTAssertTrue(
            signatureVerifies(header: header, body: body, secret: secret, now: 1_765_000_100, tolerance: 300))
        var tampered = body
        tampered[tampered.count - 3] ^= 1
        XCTAssertFalse(
            signatureVerifies(header: header, body: tampered, secret: secret, now: 1_765_000_100, tolerance: 300))
        XCTAssertFalse(
            signatureVerifies(
                header: header, body: body, secret: Array("another secret".utf8), now: 1_765_000_100, tolerance: 300))
        XCTAssertFalse(
            signatureVerifies(header: header, body: body, secret: secret, now: 1_765_000_301, tolerance: 300),
            "a replay older than the tolerance")
        XCTAssertFalse(signatureVerifies(header: "v1=00", body: body, secret: secret, now: 0, tolerance: 300))
    }
}
