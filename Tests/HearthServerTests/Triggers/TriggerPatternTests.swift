import HearthCore
import HearthJSON
import XCTest

@testable import HearthServer

/// Patterns with `{name}` wildcards: matching a path, and the locations a write changed with
/// their kinds.
final class TriggerPatternTests: XCTestCase {
    private func node(_ json: String) throws -> Node {
        var importer = NodeImporter(limits: .default, baseDepth: 0)
        return try importer.importNode(try JSONParser.parse(Array(json.utf8)))
    }

    private func path(_ text: String) throws -> Path { try Path.parse(text, allowPriority: true) }

    private func params(_ pairs: KeyValuePairs<String, String>) -> [TriggerParam] {
        pairs.map { TriggerParam(name: $0.key, value: $0.value) }
    }

    func testMatchingAPath() throws {
        let pattern = try TriggerPattern("/rooms/{room}/messages/{id}")
        XCTAssertEqual(
            pattern.match(try path("/rooms/r1/messages/m9")), params(["room": "r1", "id": "m9"]))
        XCTAssertNil(pattern.match(try path("/rooms/r1/messages")))
        XCTAssertNil(pattern.match(try path("/rooms/r1/messages/m9/text")))
        XCTAssertNil(pattern.match(try path("/rooms/r1/notes/m9")))
        XCTAssertEqual(try TriggerPattern("/").match(.root), [])
        XCTAssertEqual(try TriggerPattern("/a//b/").segments, [.literal(Key("a")), .literal(Key("b"))])
        for bad in ["", "a/b", "/a/{}", "/a/{b", "/a/b}", "/a/{b-c}", "/{x}/{x}", "/a.b", "/a$", "/{x}y"] {
            XCTAssertThrowsError(try TriggerPattern(bad), bad)
        }
    }

    func testKindsAtTheLocationWritten() throws {
        let pattern = try TriggerPattern("/messages/{id}")
        let before = try node(#"{"messages":{"a":{"text":"hi"},"b":{"text":"yo"}}}"#)
        let created = before.setting(try path("/messages/c"), to: try node(#"{"text":"new"}"#))
        let change = try XCTUnwrap(pattern.changes(at: [try path("/messages/c")], before: before, after: created).first)
        XCTAssertEqual(change.kind, .create)
        XCTAssertEqual(change.path, try path("/messages/c"))
        XCTAssertEqual(change.params, params(["id": "c"]))
        XCTAssertTrue(change.before.isEmpty)
        XCTAssertEqual(change.after, try node(#"{"text":"new"}"#))

        // A write below a location changes it: an update of the whole location.
        let edited = before.setting(try path("/messages/a/text"), to: try node(#""edited""#))
        let update = pattern.changes(at: [try path("/messages/a/text")], before: before, after: edited)
        XCTAssertEqual(update.map(\.kind), [.update])
        XCTAssertEqual(update.first?.before, try node(#"{"text":"hi"}"#))
        XCTAssertEqual(update.first?.after, try node(#"{"text":"edited"}"#))

        let deleted = before.setting(try path("/messages/b"), to: .empty)
        XCTAssertEqual(
            pattern.changes(at: [try path("/messages/b")], before: before, after: deleted).map(\.kind), [.delete])
        // Setting the same value, or removing what is absent, changes nothing.
        XCTAssertEqual(pattern.changes(at: [try path("/messages/a")], before: before, after: before), [])
        XCTAssertEqual(
            pattern.changes(at: [try path("/messages/zz")], before: before, after: before), [])
        // Outside the pattern.
        let other = before.setting(try path("/users/u"), to: try node("1"))
        XCTAssertEqual(pattern.changes(at: [try path("/users/u")], before: before, after: other), [])
    }

    func testAWriteAboveThePatternYieldsOneEventPerChangedChild() throws {
        let pattern = try TriggerPattern("/messages/{id}")
        let before = try node(#"{"messages":{"a":{"t":1},"b":{"t":2},"c":{"t":3}}}"#)
        let after = before.setting(try path("/messages"), to: try node(#"{"a":{"t":1},"b":{"t":20},"d":{"t":4}}"#))
        let changes = pattern.changes(at: [try path("/messages")], before: before, after: after)
        XCTAssertEqual(changes.map(\.path.description), ["/messages/b", "/messages/c", "/messages/d"])
        XCTAssertEqual(changes.map(\.kind), [.update, .delete, .create])
        XCTAssertEqual(changes.map(\.params), [params(["id": "b"]), params(["id": "c"]), params(["id": "d"])])

        // From the root, and through a literal segment below a wildcard.
        let likes = try TriggerPattern("/posts/{post}/likes/{uid}")
        let old = try node(#"{"posts":{"p1":{"likes":{"u1":true},"title":"x"}}}"#)
        let new = try node(#"{"posts":{"p1":{"likes":{"u2":true},"title":"y"},"p2":{"likes":{"u1":true}}}}"#)
        let liked = likes.changes(at: [.root], before: old, after: new)
        XCTAssertEqual(
            liked.map(\.path.description), ["/posts/p1/likes/u1", "/posts/p1/likes/u2", "/posts/p2/likes/u1"])
        XCTAssertEqual(liked.map(\.kind), [.delete, .create, .create])
        XCTAssertEqual(liked.last?.params, params(["post": "p2", "uid": "u1"]))
    }

    func testAMultiPathUpdateNamesEachLocationOnce() throws {
        let pattern = try TriggerPattern("/messages/{id}")
        let before = try node(#"{"messages":{"a":{"t":1,"u":1}}}"#)
        var after = before.setting(try path("/messages/a/t"), to: try node("2"))
        after = after.setting(try path("/messages/a/u"), to: try node("3"))
        after = after.setting(try path("/messages/b"), to: try node("true"))
        let changes = pattern.changes(
            at: [try path("/messages/a/t"), try path("/messages/a/u"), try path("/messages/b")], before: before,
            after: after)
        XCTAssertEqual(changes.map(\.path.description), ["/messages/a", "/messages/b"])
        XCTAssertEqual(changes.map(\.kind), [.update, .create])
    }

    func testAPriorityChangeIsAnUpdate() throws {
        let pattern = try TriggerPattern("/items/{id}")
        let before = try node(#"{"items":{"a":{".value":1,".priority":1}}}"#)
        let after = try node(#"{"items":{"a":{".value":1,".priority":2}}}"#)
        XCTAssertEqual(
            pattern.changes(at: [try path("/items/a/.priority")], before: before, after: after).map(\.kind), [.update])
        XCTAssertEqual(pattern.changes(at: [try path("/items/.priority")], before: before, after: before), [])
    }
}
