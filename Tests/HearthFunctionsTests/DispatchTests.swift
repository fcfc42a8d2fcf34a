import HearthFunctions
import HearthJSON
import NIOConcurrencyHelpers
import XCTest

/// Events: decoding the body, and dispatch to handlers by pattern and kind.
final class DispatchTests: XCTestCase {
    static func eventJSON(
        id: String = "e1", path: String = "/messages/m1", kind: String = "create", params: String = #"{"id":"m1"}"#,
        auth: String = "null"
    ) -> String {
        #"{"id":"\#(id)","trigger":"notify","db":"default","path":"\#(path)","params":\#(params),"kind":"\#(kind)","#
            + #""before":null,"after":{"text":"hi","n":2},"rev":42,"timestamp":1800000000123,"auth":\#(auth)}"#
    }

    static func event(
        id: String = "e1", path: String = "/messages/m1", kind: String = "create", params: String = #"{"id":"m1"}"#
    ) throws -> TriggerEvent {
        try TriggerEvent(body: Array(eventJSON(id: id, path: path, kind: kind, params: params).utf8))
    }

    func testDecodesTheBody() throws {
        let event = try TriggerEvent(
            body: Array(Self.eventJSON(auth: #"{"uid":"u1","token":{"admin":false,"email":"a@b"}}"#).utf8))
        XCTAssertEqual(event.id, "e1")
        XCTAssertEqual(event.trigger, "notify")
        XCTAssertEqual(event.db, "default")
        XCTAssertEqual(event.path, "/messages/m1")
        XCTAssertEqual(event.params, ["id": "m1"])
        XCTAssertEqual(event.kind, .create)
        XCTAssertEqual(event.before, .null)
        XCTAssertEqual(event.after, .object(["text": .string("hi"), "n": .int(2)]))
        XCTAssertEqual(event.rev, 42)
        XCTAssertEqual(event.timestamp, 1_800_000_000_123)
        XCTAssertEqual(event.auth, .user(uid: "u1", token: .object(["admin": .bool(false), "email": .string("a@b")])))
        XCTAssertEqual(try TriggerEvent(body: Array(Self.eventJSON(auth: #"{"admin":true}"#).utf8)).auth, .admin)
        XCTAssertEqual(try Self.event().auth, .unauthenticated)
    }

    func testRefusesBodiesThatAreNotEvents() {
        for body in [
            "", "[]", "{", #"{"id":"e1"}"#, Self.eventJSON(kind: "write"), Self.eventJSON(params: "[1]"),
            Self.eventJSON(params: #"{"id":5}"#), Self.eventJSON(auth: "true"), Self.eventJSON(auth: #"{"token":{}}"#),
        ] {
            XCTAssertThrowsError(try TriggerEvent(body: Array(body.utf8)), body)
        }
    }

    func testPatterns() throws {
        let pattern = try PathPattern("/rooms/{room}/messages/{id}")
        XCTAssertEqual(pattern.match("/rooms/r1/messages/m1"), ["room": "r1", "id": "m1"])
        XCTAssertEqual(pattern.match("rooms/r1/messages/m1/"), ["room": "r1", "id": "m1"])
        XCTAssertNil(pattern.match("/rooms/r1/messages"))
        XCTAssertNil(pattern.match("/rooms/r1/messages/m1/text"))
        XCTAssertNil(pattern.match("/room/r1/messages/m1"))
        XCTAssertEqual(try PathPattern("/").match("/"), [:])
        for invalid in ["/a/{}", "/a/{b", "/a/b}", "/{x}/{x}", "/a{b}"] {
            XCTAssertThrowsError(try PathPattern(invalid), invalid)
        }
    }

    func testDispatchesByPatternAndKind() async throws {
        let functions = Functions()
        let calls = NIOLockedValueBox<[String]>([])
        functions.onCreate("/messages/{msg}") { event in
            calls.withLockedValue { $0.append("create \(event.params["msg"] ?? "?") \(event.params["id"] ?? "?")") }
        }
        functions.onUpdate("/messages/{id}") { event in calls.withLockedValue { $0.append("update \(event.path)") } }
        functions.onDelete("/messages/{id}") { event in calls.withLockedValue { $0.append("delete \(event.path)") } }
        functions.onWrite("/messages/{id}") { event in calls.withLockedValue { $0.append("write \(event.kind)") } }
        functions.onCreate("/users/{uid}") { _ in calls.withLockedValue { $0.append("user") } }

        let created = try await functions.dispatch(Self.event(kind: "create"))
        XCTAssertEqual(created, .handled(2))
        let updated = try await functions.dispatch(Self.event(kind: "update"))
        XCTAssertEqual(updated, .handled(2))
        let deleted = try await functions.dispatch(Self.event(kind: "delete"))
        XCTAssertEqual(deleted, .handled(2))
        let deeper = try await functions.dispatch(Self.event(path: "/messages/m1/text"))
        XCTAssertEqual(deeper, .unmatched)
        let user = try await functions.dispatch(Self.event(path: "/users/u9", params: "{}"))
        XCTAssertEqual(user, .handled(1))
        XCTAssertEqual(
            calls.withLockedValue { $0 },
            [
                "create m1 m1", "write create", "update /messages/m1", "write update", "delete /messages/m1",
                "write delete", "user",
            ])
    }

    func testParamsComeFromTheEventAndFromThePath() async throws {
        let functions = Functions()
        let seen = NIOLockedValueBox<[String: String]>([:])
        functions.onCreate("/rooms/{room}/messages/{id}") { event in seen.withLockedValue { $0 = event.params } }
        _ = try await functions.dispatch(
            Self.event(path: "/rooms/r1/messages/m1", params: #"{"server":"s","id":"m1"}"#))
        XCTAssertEqual(seen.withLockedValue { $0 }, ["server": "s", "room": "r1", "id": "m1"])
    }

    struct Boom: Error {}

    func testAThrowingHandlerStopsAndEveryDeliveryRunsAgain() async throws {
        let functions = Functions()
        let runs = NIOLockedValueBox(0)
        functions.onCreate("/messages/{id}") { _ in
            let count = runs.withLockedValue { count in
                count += 1
                return count
            }
            if count == 1 { throw Boom() }
        }
        let event = try Self.event()
        do {
            _ = try await functions.dispatch(event)
            XCTFail("the handler's error was not rethrown")
        } catch is Boom {}
        let retried = try await functions.dispatch(event)
        XCTAssertEqual(retried, .handled(1))
        // Without a seen-id window, the same id reaches the handler again.
        let again = try await functions.dispatch(event)
        XCTAssertEqual(again, .handled(1))
        XCTAssertEqual(runs.withLockedValue { $0 }, 3)
    }

    func testSeenWindowSkipsHandledIdsOnly() async throws {
        let functions = Functions(seenWindow: 2)
        let runs = NIOLockedValueBox<[String]>([])
        functions.onWrite("/messages/{id}") { event in runs.withLockedValue { $0.append(event.id) } }
        for id in ["a", "a", "b", "a", "c", "a"] {
            _ = try await functions.dispatch(Self.event(id: id))
        }
        // "a" is remembered until two newer ids pushed it out of the window.
        XCTAssertEqual(runs.withLockedValue { $0 }, ["a", "b", "c", "a"])
        let duplicate = try await functions.dispatch(Self.event(id: "c"))
        XCTAssertEqual(duplicate, .duplicate)
    }
}
