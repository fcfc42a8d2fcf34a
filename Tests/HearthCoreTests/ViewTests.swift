import HearthCore
import HearthJSON
import XCTest

/// View behaviour beyond the vectors: leaf locations (docs/PROTOCOL.md, "get"), value rendering, priorities.
final class ViewTests: XCTestCase {
    func spec(_ text: String) throws -> QuerySpec { try QuerySpec(json: json(text), limits: .default) }

    func rendered(_ view: View, _ format: Node.Format = .export) -> String {
        var buffer: [UInt8] = []
        view.writeValue(into: &buffer, format: format)
        return String(decoding: buffer, as: UTF8.self)
    }

    func types(_ events: [ViewEvent]) -> [String] {
        events.map { "\($0.type.rawValue) \($0.key?.string ?? "-") \($0.prevKey?.string ?? "-")" }
    }

    func testLeafLocation() throws {
        let leaf = try node(json(#"{".value": "blah", ".priority": 1}"#))
        var plain = View(spec: .default, location: leaf, index: nil)
        XCTAssertEqual(types(plain.initialEvents()), ["value - -"])
        XCTAssertEqual(rendered(plain), #"{".value":"blah",".priority":1}"#)
        XCTAssertEqual(rendered(plain, .plain), #""blah""#)
        var limited = View(spec: try spec(#"{"limitToLast": 2}"#), location: leaf, index: nil)
        XCTAssertEqual(rendered(limited), "null")
        var ranged = View(spec: try spec(#"{"orderBy": "$value", "startAt": null}"#), location: leaf, index: nil)
        XCTAssertEqual(rendered(ranged), "null")

        // Leaf → other leaf: a value-only event for the plain view, nothing for filtered ones.
        let other = try node(json("2"))
        XCTAssertEqual(types(plain.apply(location: other, changedChildren: nil, index: nil)), ["value - -"])
        XCTAssertEqual(types(limited.apply(location: other, changedChildren: nil, index: nil)), [])
        XCTAssertEqual(types(ranged.apply(location: other, changedChildren: nil, index: nil)), [])
        // Same leaf again: nothing. Priority only: value.
        XCTAssertEqual(types(plain.apply(location: other, changedChildren: nil, index: nil)), [])
        XCTAssertEqual(
            types(plain.apply(location: other.withPriority(.string("p")), changedChildren: nil, index: nil)),
            ["value - -"])

        // Leaf → object: children appear for every view.
        let object = try node(json(#"{"a": 1, "b": 2}"#))
        XCTAssertEqual(
            types(plain.apply(location: object, changedChildren: nil, index: nil)),
            ["child_added a -", "child_added b a", "value - -"])
        XCTAssertEqual(
            types(limited.apply(location: object, changedChildren: nil, index: nil)),
            ["child_added a -", "child_added b a", "value - -"])
        XCTAssertEqual(
            types(ranged.apply(location: object, changedChildren: nil, index: nil)),
            ["child_added a -", "child_added b a", "value - -"])
        // Object → leaf → empty.
        XCTAssertEqual(
            types(plain.apply(location: other, changedChildren: nil, index: nil)),
            ["child_removed a -", "child_removed b -", "value - -"])
        XCTAssertEqual(
            types(limited.apply(location: other, changedChildren: nil, index: nil)),
            ["child_removed a -", "child_removed b -", "value - -"])
        XCTAssertEqual(types(plain.apply(location: .empty, changedChildren: nil, index: nil)), ["value - -"])
        XCTAssertEqual(types(limited.apply(location: .empty, changedChildren: nil, index: nil)), [])
        XCTAssertEqual(rendered(plain), "null")
        XCTAssertEqual(types(plain.apply(location: .empty, changedChildren: nil, index: nil)), [])
        XCTAssertEqual(
            types(ranged.apply(location: .empty, changedChildren: nil, index: nil)),
            ["child_removed a -", "child_removed b -", "value - -"])
    }

    func testLocationPriorityIsDroppedByFilteredViews() throws {
        let location = try node(json(#"{"a": "blah", "b": {".value": 1, ".priority": "q"}, ".priority": "priority"}"#))
        let plain = View(spec: .default, location: location, index: nil)
        XCTAssertEqual(rendered(plain), #"{"a":"blah","b":{".value":1,".priority":"q"},".priority":"priority"}"#)
        XCTAssertEqual(rendered(plain, .plain), #"{"a":"blah","b":1}"#)
        let limited = View(spec: try spec(#"{"limitToLast": 2}"#), location: location, index: nil)
        XCTAssertEqual(rendered(limited), #"{"a":"blah","b":{".value":1,".priority":"q"}}"#)
        var keyView = View(spec: try spec(#"{"orderBy": "$key"}"#), location: location, index: nil)
        XCTAssertEqual(rendered(keyView), #"{"a":"blah","b":{".value":1,".priority":"q"},".priority":"priority"}"#)
        var limitedAgain = limited
        let reprioritized = location.withPriority(.number(.int(1)))
        XCTAssertEqual(types(keyView.apply(location: reprioritized, changedChildren: nil, index: nil)), ["value - -"])
        XCTAssertEqual(types(limitedAgain.apply(location: reprioritized, changedChildren: nil, index: nil)), [])
    }

    func testValueRenderedInQueryOrder() throws {
        let location = try node(json(#"{"a": 3, "b": 1, "c": 2, "d": {"x": 1}}"#))
        let byValue = View(spec: try spec(#"{"orderBy": "$value"}"#), location: location, index: nil)
        XCTAssertEqual(rendered(byValue), #"{"b":1,"c":2,"a":3,"d":{"x":1}}"#)
        let ranged = View(
            spec: try spec(#"{"orderBy": "$value", "startAfter": 1, "endAt": 3}"#), location: location, index: nil)
        XCTAssertEqual(rendered(ranged), #"{"c":2,"a":3}"#)
        XCTAssertEqual(types(ranged.initialEvents()), ["child_added c -", "child_added a c", "value - -"])
        let empty = View(
            spec: try spec(#"{"orderBy": "$value", "equalTo": "nothing"}"#), location: location, index: nil)
        XCTAssertEqual(rendered(empty), "null")
        XCTAssertEqual(types(empty.initialEvents()), ["value - -"])
    }

    func testChangedChildrenMayBeOverstatedOrDuplicated() throws {
        let before = try node(json(#"{"a": 1, "b": 2, "c": 3}"#))
        let after = try node(json(#"{"a": 1, "b": 5, "c": 3}"#))
        for text in [
            "{}", #"{"orderBy": "$value"}"#, #"{"orderBy": "$value", "limitToFirst": 2}"#, #"{"startAt": null}"#,
        ] {
            var view = View(spec: try spec(text), location: before, index: nil)
            let events = view.apply(
                location: after, changedChildren: [Key("a"), Key("b"), Key("b"), Key("zz")], index: nil)
            XCTAssertTrue(
                events.contains { $0.type == .childChanged && $0.key == Key("b") } || text.contains("limitToFirst"),
                text)
            XCTAssertEqual(events.last?.type, .value, text)
            XCTAssertEqual(
                events.filter { $0.type == .childChanged }.count, text.contains("limitToFirst") ? 0 : 1, text)
        }
    }

    func testLargeLocationLimitedQueryUsesTheIndex() throws {
        var children: [(Key, Node)] = []
        for i in 0..<20_000 {
            let digits = String(i)
            let key = Key("k" + String(repeating: "0", count: 5 - digits.count) + digits)
            children.append(
                (key, .object(ChildMap().inserting(Key("score"), .leaf(.number(.int(Int64(i * 7 % 20_000))))))))
        }
        var location = Node.object(ChildMap(sortedUniqueEntries: children))
        let spec = try spec(#"{"orderBy": "score", "limitToLast": 3}"#)
        var index = ChildIndex(order: spec.order, location: location)
        var view = View(spec: spec, location: location, index: index)
        XCTAssertEqual(view.window.count, 3)
        let top = Key("k00000")
        let newChild = Node.object(ChildMap().inserting(Key("score"), .leaf(.number(.int(1_000_000)))))
        let newLocation = location.settingChild(top, newChild)
        index.update(key: top, from: location.child(top), to: newChild)
        location = newLocation
        let events = view.apply(location: location, changedChildren: [top], index: index)
        XCTAssertEqual(events.map(\.type), [.childRemoved, .childAdded, .value])
        XCTAssertEqual(view.window.last?.key, top)
        XCTAssertEqual(view.window.map(\.key), QueryEvaluator.window(spec, of: location, index: nil).map(\.key))
    }
}
