import HearthCore
import HearthJSON
import XCTest

/// Sort values (docs/PROTOCOL.md, "Queries") and the orders built on them.
final class IndexValueTests: XCTestCase {
    func testValueOrder() {
        let ascending: [IndexValue] = [
            .null, .bool(false), .bool(true), .number(.int(-5)), .number(.double(-0.5)), .number(.int(0)),
            .number(.double(1.5)), .number(.int(9_007_199_254_740_993)), .string(""), .string("Z"), .string("a"),
            .string("ab"), .string("e\u{301}"), .string("\u{E9}"), .string("😀"), .string("\u{FF5E}"), .object,
        ]
        for (i, a) in ascending.enumerated() {
            for (j, b) in ascending.enumerated() {
                let expected = i < j ? -1 : (i == j ? 0 : 1)
                XCTAssertEqual(IndexValue.compare(a, b), expected, "\(a) vs \(b)")
                XCTAssertEqual(a == b, i == j, "\(a) == \(b)")
            }
        }
    }

    func testEqualityAndHashAgreeWithTheOrder() {
        XCTAssertEqual(IndexValue.number(.int(1)), .number(.double(1.0)))
        XCTAssertEqual(Set<IndexValue>([.number(.int(1)), .number(.double(1.0))]).count, 1)
        XCTAssertEqual(Set<IndexValue>([.number(.int(0)), .number(.double(-0.0))]).count, 1)
        XCTAssertNotEqual(IndexValue.string("\u{E9}"), .string("e\u{301}"), "no canonical equivalence")
        XCTAssertEqual(Set<IndexValue>([.string("\u{E9}"), .string("e\u{301}")]).count, 2)
        XCTAssertEqual(Set<IndexValue>([.object, .object, .null, .bool(false)]).count, 3)
        XCTAssertNotEqual(IndexValue.number(.int(9_007_199_254_740_993)), .number(.double(9_007_199_254_740_992)))
    }

    func testSortValuesOfChildren() throws {
        let child = try node(json(#"{"a": {"b": 3, "c": {"d": true}}, "leaf": "x", ".priority": 7}"#))
        XCTAssertEqual(QueryOrder.priority.indexValue(of: child), .number(.int(7)))
        XCTAssertEqual(QueryOrder.key.indexValue(of: child), .null)
        XCTAssertEqual(QueryOrder.value.indexValue(of: child), .object)
        XCTAssertEqual(QueryOrder.child(try path("a/b")).indexValue(of: child), .number(.int(3)))
        XCTAssertEqual(QueryOrder.child(try path("a/c")).indexValue(of: child), .object)
        XCTAssertEqual(QueryOrder.child(try path("leaf/x")).indexValue(of: child), .null, "below a leaf")
        XCTAssertEqual(QueryOrder.child(try path("missing")).indexValue(of: child), .null)
        XCTAssertEqual(
            QueryOrder.value.indexValue(of: try node(json(#"{".value": "s", ".priority": 1}"#))), .string("s"))
        XCTAssertEqual(
            QueryOrder.priority.indexValue(of: try node(json(#"{".value": "s", ".priority": "p"}"#))), .string("p"))
    }

    func testPairComparisonBreaksTiesByKey() {
        let order = QueryOrder.value
        XCTAssertLessThan(order.compare((.number(.int(1)), Key("b")), (.number(.double(1)), Key("c"))), 0)
        XCTAssertLessThan(order.compare((.number(.int(1)), Key("9")), (.number(.int(1)), Key("10"))), 0, "integer keys")
        XCTAssertLessThan(order.compare((.object, Key("a")), (.object, Key("b"))), 0)
        XCTAssertGreaterThan(order.compare((.string(""), Key("a")), (.number(.int(99)), Key("b"))), 0)
        XCTAssertEqual(
            QueryOrder.key.compare((.string("z"), Key("a")), (.null, Key("a"))), 0, "key order ignores values")
        XCTAssertLessThan(QueryOrder.key.compare((.null, Key("03")), (.null, Key("003"))), 0)
    }

    func testMovedDefinition() throws {
        let one = try node(json("1"))
        let onePrioritized = try node(json(#"{".value": 1, ".priority": 3}"#))
        XCTAssertTrue(QueryOrder.value.sortValueChanged(from: one, to: onePrioritized), "value: any change")
        XCTAssertFalse(QueryOrder.key.sortValueChanged(from: one, to: try node(json("2"))))
        XCTAssertTrue(QueryOrder.priority.sortValueChanged(from: one, to: onePrioritized))
        XCTAssertFalse(QueryOrder.priority.sortValueChanged(from: one, to: try node(json("2"))))
        let s = QueryOrder.child(try path("s"))
        XCTAssertFalse(
            s.sortValueChanged(from: try node(json(#"{"s": {"x": 1}}"#)), to: try node(json(#"{"s": {"x": 2}}"#))))
        XCTAssertFalse(s.sortValueChanged(from: try node(json(#"{"t": 1}"#)), to: try node(json(#"{"t": 2}"#))))
        XCTAssertFalse(
            s.sortValueChanged(from: try node(json(#"{"s": 1}"#)), to: try node(json(#"{"s": 1.0, "t": 1}"#))))
        XCTAssertTrue(s.sortValueChanged(from: try node(json(#"{"s": 1}"#)), to: try node(json(#"{"s": "1"}"#))))
    }
}
