import HearthJSON
import HearthServer
import XCTest

/// Queries and subscriptions through the live server: every `queries`, `events` and
/// `invalidQueries` vector, plus the subscription lifecycle.
final class LiveQueryTests: XCTestCase {
    func testQueryVectorsThroughGetAndSubscribe() async throws {
        let vectors = ServerVectors.list("queries")
        XCTAssertGreaterThan(vectors.count, 60)
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            for (i, vector) in vectors.enumerated() {
                let name = vector["name"]?.stringValue ?? "?"
                let prefix = "/q\(i)"
                let set = JSONValue.object([
                    "op": .string("set"), "path": .string(prefix), "value": vector["data"] ?? .null,
                ])
                try c.request(set.jsonString)
                let location = prefix + (vector["path"]?.stringValue ?? "/")
                let query = ServerVectors.wireQuery(vector["query"] ?? .object([]))
                let get = try c.request(
                    JSONValue.object(["op": .string("get"), "path": .string(location), "query": query]).jsonString)
                XCTAssertEqual(get["ok"], .bool(true), "\(name): \(get.jsonString)")
                let keys = get["value"]?.objectMembers?.map { JSONValue.string($0.key) } ?? []
                XCTAssertEqual(keys, vector["expectKeys"]?.arrayItems, "get \(name)")

                let subscribe = try c.request(
                    JSONValue.object([
                        "op": .string("subscribe"), "path": .string(location), "query": query,
                        "events": .array([.string("child_added"), .string("value")]),
                    ]).jsonString)
                let sub = try XCTUnwrap(subscribe["sub"], name)
                var added: [JSONValue] = []
                var prevs: [JSONValue] = []
                while true {
                    let event = try c.readJSON()
                    XCTAssertEqual(event["sub"], sub)
                    if event["event"] == .string("value") { break }
                    added.append(event["key"] ?? .null)
                    prevs.append(event["prev"] ?? .null)
                }
                XCTAssertEqual(added, vector["expectKeys"]?.arrayItems, "child_added \(name)")
                XCTAssertEqual(prevs, vector["expectInitialPrevKeys"]?.arrayItems, "prev keys \(name)")
                XCTAssertEqual(try c.request(#"{"op":"unsubscribe","sub":\#(sub.jsonString)}"#)["ok"], .bool(true))
            }
        }
    }

    func testEventVectors() async throws {
        let vectors = ServerVectors.list("events")
        XCTAssertGreaterThan(vectors.count, 20)
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            for (i, vector) in vectors.enumerated() {
                let name = vector["name"]?.stringValue ?? "?"
                let prefix = "/e\(i)"
                let set = JSONValue.object([
                    "op": .string("set"), "path": .string(prefix), "value": vector["initial"] ?? .null,
                ])
                try c.request(set.jsonString)
                let location = prefix + (vector["path"]?.stringValue ?? "/")
                let query = ServerVectors.wireQuery(vector["query"] ?? .object([]))
                let subscribe = try c.request(
                    JSONValue.object([
                        "op": .string("subscribe"), "path": .string(location), "query": query,
                        "events": .array(
                            ["child_removed", "child_added", "child_moved", "child_changed", "value"].map(
                                JSONValue.string)),
                    ]).jsonString)
                XCTAssertEqual(subscribe["ok"], .bool(true), "\(name): \(subscribe.jsonString)")
                var steps: [[JSONValue]] = []
                var initial: [JSONValue] = []
                while true {
                    let event = try c.readJSON()
                    initial.append(Self.tuple(event))
                    if event["event"] == .string("value") { break }
                }
                steps.append(initial)
                for write in vector["writes"]?.arrayItems ?? [] {
                    c.events = []
                    let response = try c.request(ServerVectors.request(for: write, prefix: prefix))
                    XCTAssertEqual(response["ok"], .bool(true), "\(name): \(response.jsonString)")
                    steps.append(c.events.map(Self.tuple))
                }
                let expected = vector["expectEventsByStep"]?.arrayItems.map(\.arrayItems) ?? []
                XCTAssertEqual(steps, expected, name)
                try c.request(#"{"op":"unsubscribe","sub":\#(subscribe["sub"]?.jsonString ?? "0")}"#)
            }
        }
    }

    func testInvalidQueryVectors() async throws {
        let vectors = ServerVectors.list("invalidQueries")
        XCTAssertGreaterThan(vectors.count, 20)
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            for vector in vectors {
                let calls = vector["calls"]?.arrayItems ?? []
                // orderByChild("$key") and ("$value") are client-side mistakes; on the wire
                // "$key" and "$value" are the names of orderByKey and orderByValue.
                if calls.contains(where: {
                    $0.arrayItems.first == .string("orderByChild")
                        && [.string("$key"), .string("$value")].contains($0.arrayItems.last)
                }) {
                    continue
                }
                let query = ServerVectors.wireQuery(calls: calls)
                let line = JSONValue.object(["op": .string("get"), "path": .string("/x"), "query": query]).jsonString
                let response = try c.request(line)
                if vector["expectError"] == .bool(true) {
                    XCTAssertEqual(response.errorCode, "invalid_query", "\(query.jsonString) → \(response.jsonString)")
                } else {
                    XCTAssertEqual(response["ok"], .bool(true), "\(query.jsonString) → \(response.jsonString)")
                }
            }
        }
    }

    func testQueryReadsHonourShallowHashAndExport() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/s","value":{"a":{"n":3},"b":{"n":1},"c":{"n":2},".priority":"p"}}"#)
            let ordered = try c.request(#"{"op":"get","path":"/s","query":{"orderBy":"n"},"format":"export"}"#)
            XCTAssertEqual(ordered["value"]?.objectMembers?.map(\.key), ["b", "c", "a", ".priority"])
            let shallow = try c.request(
                #"{"op":"get","path":"/s","query":{"orderBy":"n","limitToFirst":2},"shallow":true}"#)
            XCTAssertEqual(shallow["value"], json(#"{"b":true,"c":true}"#))
            let whole = try c.request(#"{"op":"get","path":"/s","hash":true}"#)
            let unfiltered = try c.request(#"{"op":"get","path":"/s","query":{"orderBy":"n"},"hash":true}"#)
            XCTAssertEqual(unfiltered["hash"], whole["hash"], "an unfiltered query hashes like the location")
            let limited = try c.request(
                #"{"op":"get","path":"/s","query":{"orderBy":"n","limitToFirst":1},"hash":true}"#)
            try c.request(#"{"op":"set","path":"/t","value":{"b":{"n":1}}}"#)
            XCTAssertEqual(limited["hash"], try c.request(#"{"op":"get","path":"/t","hash":true}"#)["hash"])
        }
    }

    /// An event as the vectors write it: [type, key, prev].
    static func tuple(_ event: JSONValue) -> JSONValue {
        let type = event["event"] ?? .null
        if type == .string("value") { return .array([type, .null, .null]) }
        return .array([type, event["key"] ?? .null, event["prev"] ?? .null])
    }
}
