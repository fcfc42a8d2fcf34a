import HearthCore
import HearthJSON
import XCTest

/// Parsing and validating wire queries (docs/PROTOCOL.md, "Queries": bounds and invalid queries).
final class QuerySpecTests: XCTestCase {
    func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws(DatabaseError) -> QuerySpec {
        try QuerySpec(json: json(text, file: file, line: line), limits: .default)
    }

    func assertInvalid(_ text: String, mentions: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        do throws(DatabaseError) {
            let spec = try parse(text, file: file, line: line)
            XCTFail("\(text) parsed as \(spec)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .invalidQuery, "\(text): \(error)", file: file, line: line)
            if let mentions {
                XCTAssertTrue(error.message.contains(mentions), "\(text): \(error.message)", file: file, line: line)
            }
        }
    }

    /// The SDK call sequences of the `invalidQueries` vectors, as wire objects. A repeated call
    /// becomes a repeated member (JSONValue keeps duplicates), which the parser rejects like the
    /// second call. `orderByChild("$key")` / `orderByChild("$value")` cannot be expressed: on the
    /// wire `"orderBy":"$key"` *is* orderByKey (valid), so those two vectors are skipped; the
    /// remaining `$` cases (`"$foo"`, `"$child/foo"`) are covered below and by the vector
    /// `orderByChild invalid path chars`.
    func testInvalidQueryVectors() throws {
        let vectors = Vectors.list("invalidQueries")
        XCTAssertEqual(vectors.count, 28)
        var checked = 0
        for vector in vectors {
            let name = vector["name"]?.stringValue ?? "?"
            guard let wire = Self.wireObject(calls: vector["calls"]?.arrayValue ?? []) else { continue }
            checked += 1
            let expectError = vector["expectError"]?.boolValue ?? true
            do throws(DatabaseError) {
                let spec = try QuerySpec(json: wire, limits: .default)
                XCTAssertFalse(expectError, "\(name): \(wire.jsonString) parsed as \(spec)")
                XCTAssertEqual(try? QuerySpec(json: spec.json, limits: .default), spec, name)
            } catch {
                XCTAssertTrue(expectError, "\(name): \(error)")
                XCTAssertEqual(error.code, .invalidQuery, name)
            }
        }
        XCTAssertEqual(checked, 26)
    }

    /// SDK calls → wire members; nil when the sequence has no wire form.
    static func wireObject(calls: [JSONValue]) -> JSONValue? {
        var members: [JSONMember] = []
        for call in calls {
            let parts = call.arrayValue ?? []
            let method = parts.first?.stringValue ?? ""
            let args = Array(parts.dropFirst())
            switch method {
            case "orderByKey": members.append(JSONMember("orderBy", .string("$key")))
            case "orderByValue": members.append(JSONMember("orderBy", .string("$value")))
            case "orderByPriority": members.append(JSONMember("orderBy", .string("$priority")))
            case "orderByChild":
                let child = args.first?.stringValue ?? ""
                if ["$key", "$value", "$priority"].contains(child) { return nil }
                members.append(JSONMember("orderBy", .string(child)))
            case "limitToFirst", "limitToLast":
                members.append(JSONMember(method, args.first ?? .null))
            default:
                members.append(JSONMember(method, args.first ?? .null))
                if args.count > 1 { members.append(JSONMember(method + "Key", args[1])) }
            }
        }
        return .object(members)
    }

    func testExplicitInvalidWireQueries() {
        assertInvalid(#"{"startAt": 1, "startAfter": 1}"#, mentions: "starting point")
        assertInvalid(#"{"startAfter": 1, "equalTo": 1}"#, mentions: "starting point")
        assertInvalid(#"{"equalTo": 1, "endAt": 2}"#, mentions: "ending point")
        assertInvalid(#"{"endBefore": 1, "endAt": 2}"#, mentions: "ending point")
        assertInvalid(#"{"limitToFirst": 1, "limitToLast": 1}"#, mentions: "one limit")
        for bad in ["0", "-1", "1.5", #""100""#, "null", "true", "[1]", "1e300"] {
            assertInvalid(#"{"limitToFirst": \#(bad)}"#, mentions: "positive integer")
            assertInvalid(#"{"limitToLast": \#(bad)}"#, mentions: "positive integer")
        }
        assertInvalid(#"{"orderBy": "$key", "startAt": "a", "startAtKey": "a"}"#, mentions: "ordering by key")
        assertInvalid(#"{"orderBy": "$key", "equalTo": "a", "equalToKey": "a"}"#, mentions: "ordering by key")
        for bad in ["null", "true", "5", "{}", "[]"] {
            assertInvalid(#"{"orderBy": "$key", "startAt": \#(bad)}"#, mentions: "must be a string")
            assertInvalid(#"{"orderBy": "$key", "endBefore": \#(bad)}"#, mentions: "must be a string")
        }
        assertInvalid(#"{"startAt": true}"#, mentions: "priority")
        assertInvalid(#"{"orderBy": "$priority", "equalTo": false}"#, mentions: "priority")
        assertInvalid(#"{"endAt": {"a": 1}}"#, mentions: "priority")
        assertInvalid(#"{"orderBy": "$value", "equalTo": {"a": 1}}"#, mentions: "object")
        assertInvalid(#"{"orderBy": "a", "startAt": [1]}"#, mentions: "object")
        assertInvalid(#"{"orderBy": "$other"}"#, mentions: "not an order")
        assertInvalid(#"{"orderBy": "$child/foo"}"#, mentions: "invalid child path")
        assertInvalid(#"{"orderBy": "a.b"}"#, mentions: "invalid child path")
        assertInvalid(#"{"orderBy": ""}"#, mentions: "invalid child path")
        assertInvalid(#"{"orderBy": "/"}"#, mentions: "invalid child path")
        assertInvalid(#"{"orderBy": ".priority"}"#, mentions: "invalid child path")
        assertInvalid(#"{"orderBy": "a/b#"}"#, mentions: "invalid child path")
        assertInvalid(
            #"{"orderBy": "\#(Array(repeating: "a", count: 33).joined(separator: "/"))"}"#, mentions: "child path")
        assertInvalid(#"{"orderBy": 5}"#, mentions: "orderBy must be a string")
        assertInvalid(#"{"startAt": null, "startAtKey": ".x"}"#, mentions: "invalid key")
        assertInvalid(#"{"endAt": null, "endAtKey": "th/ing"}"#, mentions: "invalid key")
        assertInvalid(#"{"equalTo": 1, "equalToKey": ""}"#, mentions: "invalid key")
        assertInvalid(#"{"startAt": 1, "startAtKey": 5}"#, mentions: "must be a string")
        assertInvalid(#"{"startAtKey": "a"}"#, mentions: "startAtKey needs startAt")
        assertInvalid(#"{"startAt": 1, "endBeforeKey": "a"}"#, mentions: "endBeforeKey needs endBefore")
        assertInvalid(#"{"bad field": 1}"#, mentions: "bad field")
        assertInvalid(#"{"orderBy": "$key", "orderBy": "$key"}"#, mentions: "twice")
        assertInvalid(#"{"startAt": 1, "startAt": 1}"#, mentions: "twice")
        assertInvalid(#"[1]"#, mentions: "JSON object")
        assertInvalid(#""$key""#, mentions: "JSON object")
    }

    func testBoundsFollowTheSDK() throws {
        XCTAssertEqual(try parse("{}"), .default)
        XCTAssertEqual(try QuerySpec(json: .null, limits: .default), .default)
        XCTAssertEqual(try parse(#"{"orderBy": "$priority"}"#), .default)
        XCTAssertTrue(try parse(#"{"orderBy": "$value"}"#).isUnfiltered)
        XCTAssertFalse(try parse(#"{"startAt": null}"#).isUnfiltered)
        XCTAssertFalse(try parse(#"{"limitToLast": 3}"#).isUnfiltered)

        let five = IndexValue.number(.int(5))
        let value = try parse(#"{"orderBy": "$value", "startAfter": 5, "endBefore": 9.5}"#)
        XCTAssertEqual(value.start, QueryBound(value: five, key: .max, inclusive: false))
        XCTAssertEqual(value.end, QueryBound(value: .number(.double(9.5)), key: .min, inclusive: false))

        let keyed = try parse(#"{"startAt": 5, "startAtKey": "k", "endAt": "x", "endAtKey": "[MIN_NAME]"}"#)
        XCTAssertEqual(keyed.start, QueryBound(value: five, key: .key(Key("k")), inclusive: true))
        XCTAssertEqual(keyed.end, QueryBound(value: .string("x"), key: .min, inclusive: true))

        let equal = try parse(#"{"orderBy": "a/b", "equalTo": null}"#)
        XCTAssertEqual(equal.order, .child(Path([Key("a"), Key("b")])))
        XCTAssertEqual(equal.start, QueryBound(value: .null, key: .min, inclusive: true))
        XCTAssertEqual(equal.end, QueryBound(value: .null, key: .max, inclusive: true))
        XCTAssertEqual(equal, try parse(#"{"orderBy": "/a//b/", "startAt": null, "endAt": null}"#))

        let key = try parse(#"{"orderBy": "$key", "startAfter": "a", "endAt": "[MAX_NAME]", "limitToLast": 2}"#)
        XCTAssertEqual(key.start, QueryBound(value: .null, key: .key(Key("a")), inclusive: false))
        XCTAssertEqual(key.end, QueryBound(value: .null, key: .max, inclusive: true))
        XCTAssertEqual(key.limit, .last(2))
        XCTAssertEqual(try parse(#"{"limitToFirst": 3.0}"#).limit, .first(3))
        XCTAssertEqual(
            try parse(#"{"orderBy": "$key", "equalTo": "b.c"}"#).start?.key, .key(Key("b.c")),
            "key bounds are any string")
    }

    func testCanonicalEquality() throws {
        XCTAssertEqual(try parse(#"{"equalTo": 1}"#), try parse(#"{"startAt": 1.0, "endAt": 1}"#))
        XCTAssertEqual(
            try parse(#"{"startAfter": 1}"#), try parse(#"{"startAfter": 1, "startAfterKey": "[MAX_NAME]"}"#))
        XCTAssertEqual(try parse(#"{"startAt": -0.0}"#), try parse(#"{"startAt": 0}"#))
        XCTAssertNotEqual(try parse(#"{"startAt": "\u00e9"}"#), try parse(#"{"startAt": "e\u0301"}"#))
        XCTAssertNotEqual(try parse(#"{"equalTo": 1, "equalToKey": "a"}"#), try parse(#"{"equalTo": 1}"#))
        let specs = [
            "{}", #"{"orderBy": "$key", "equalTo": "a"}"#, #"{"orderBy": "$key", "startAt": "[MIN_NAME]"}"#,
            #"{"startAfter": null, "startAfterKey": "[MIN_NAME]", "endBefore": "z", "endBeforeKey": "[MAX_NAME]"}"#,
            #"{"equalTo": 2, "equalToKey": "b", "limitToLast": 1}"#, #"{"orderBy": "x/y", "equalTo": true}"#,
            #"{"startAt": 1, "startAtKey": "a", "endAt": 1, "endAtKey": "b"}"#,
            #"{"startAt": 1, "endAt": 1, "endAtKey": "[MIN_NAME]"}"#,
        ]
        var seen = Set<QuerySpec>()
        for text in specs {
            let spec = try parse(text)
            XCTAssertEqual(try QuerySpec(json: spec.json, limits: .default), spec, text)
            XCTAssertTrue(seen.insert(spec).inserted, text)
        }
        XCTAssertEqual(
            try parse(#"{"orderBy": "$value", "equalTo": 2, "limitToFirst": 1}"#).json.jsonString,
            #"{"orderBy":"$value","equalTo":2,"limitToFirst":1}"#)
    }
}
