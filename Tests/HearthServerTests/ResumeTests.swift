import Foundation
import HearthJSON
import HearthServer
import HearthTestSupport
import XCTest

/// Cache-mode subscriptions and resuming from a revision (docs/PROTOCOL.md, "Cache mode and resuming"),
/// through real connections: the initial counts, the `value` rule, and that the
/// events of a resume turn the result as of the client's revision into the current one.
final class ResumeTests: XCTestCase {
    static let allEvents = #"["child_added","child_changed","child_removed","child_moved","value"]"#

    /// Sends a cache-mode subscribe and reads its response and the `initial` event lines.
    func subscribeCache(
        _ c: TestClient, path: String, query: String? = nil, since: Int64? = nil, events: String = allEvents
    ) throws -> (response: JSONValue, lines: [String]) {
        var line = #"{"op":"subscribe","path":"\#(path)","cache":true,"events":\#(events)"#
        if let query { line += #","query":\#(query)"# }
        if let since { line += #","since":\#(since)"# }
        try c.send(line + "}")
        let response = try c.readResponse()
        XCTAssertEqual(response["ok"], .bool(true), "\(response)")
        let count = Int(try XCTUnwrap(response["initial"]?.int64Value, "no initial in \(response)"))
        var lines: [String] = []
        for _ in 0..<count { lines.append(try c.readLine()) }
        // Nothing else follows for it: the next line is the answer to a ping (events of other
        // subscriptions may come between).
        XCTAssertEqual(try c.request(#"{"op":"ping","id":"after"}"#)["id"], .string("after"))
        XCTAssertEqual(c.events.filter { $0["sub"] == response["sub"] }, [], "more event lines than initial=\(count)")
        c.events = []
        return (response, lines)
    }

    func testCacheModeInitialCounts() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(
                #"{"op":"update","path":"/","values":{"obj":{"a":1,"b":2,"c":3},"prio":{"a":1,".priority":5},"leaf":7}}"#
            )
            let empty = try subscribeCache(c, path: "/nothing")
            XCTAssertEqual(empty.response["initial"], .int(0))
            XCTAssertNil(empty.response["resumed"])

            let object = try subscribeCache(c, path: "/obj")
            XCTAssertEqual(object.lines.map { json($0)["event"] }, Array(repeating: .string("child_added"), count: 3))
            XCTAssertEqual(object.lines.map { json($0)["prev"] }, [.null, .string("a"), .string("b")])

            let priority = try subscribeCache(c, path: "/prio")
            XCTAssertEqual(priority.lines.map { json($0)["event"] }, [.string("child_added"), .string("value")])
            XCTAssertEqual(json(priority.lines[1])["value"], json(#"{"a":1,".priority":5}"#))

            let leaf = try subscribeCache(c, path: "/leaf")
            XCTAssertEqual(leaf.lines.map(json), [json(#"{"sub":4,"event":"value","rev":1,"value":7}"#)])

            let filtered = try subscribeCache(c, path: "/obj", query: #"{"orderBy":"$key","limitToLast":2}"#)
            XCTAssertEqual(filtered.lines.map { json($0)["key"] }, [.string("b"), .string("c")])

            let valueOnly = try subscribeCache(c, path: "/obj", events: #"["value"]"#)
            XCTAssertEqual(valueOnly.response["initial"], .int(0))

            // Without cache mode nothing changes: no `initial`, and the value comes.
            let plain = try c.request(#"{"op":"subscribe","path":"/obj"}"#)
            XCTAssertNil(plain["initial"])
            XCTAssertEqual(try c.readJSON()["event"], .string("value"))
        }
    }

    func testCacheModeValueRule() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"update","path":"/","values":{"obj":{"a":1},"leaf":1}}"#)
            let obj = try subscribeCache(c, path: "/obj").response["sub"]
            let leaf = try subscribeCache(c, path: "/leaf").response["sub"]
            let filtered = try subscribeCache(c, path: "/obj", query: #"{"orderBy":"$value","startAt":0}"#)
                .response["sub"]
            // The same view without cache mode, for comparison.
            let plain = try c.request(#"{"op":"subscribe","path":"/obj","events":\#(Self.allEvents)}"#)["sub"]
            c.events = []
            _ = try c.readJSON()
            _ = try c.readJSON()

            func eventsOf(_ line: String) throws -> [(JSONValue?, String)] {
                c.events = []
                try c.request(line)
                return c.events.map { ($0["sub"], $0["event"]?.stringValue ?? "?") }
            }
            func types(_ events: [(JSONValue?, String)], _ sub: JSONValue?) -> [String] {
                events.filter { $0.0 == sub }.map(\.1)
            }
            // An object's child changes: child events only.
            var events = try eventsOf(#"{"op":"set","path":"/obj/b","value":2}"#)
            XCTAssertEqual(types(events, obj), ["child_added"])
            XCTAssertEqual(types(events, filtered), ["child_added"])
            XCTAssertEqual(types(events, plain), ["child_added", "value"])
            // The location's own priority: a value for the unfiltered one only.
            events = try eventsOf(#"{"op":"setPriority","path":"/obj","priority":3}"#)
            XCTAssertEqual(types(events, obj), ["value"])
            XCTAssertEqual(types(events, filtered), [])
            XCTAssertEqual(c.events.first { $0["sub"] == obj }?["value"], json(#"{"a":1,"b":2,".priority":3}"#))
            // A leaf location: value events.
            events = try eventsOf(#"{"op":"set","path":"/leaf","value":2}"#)
            XCTAssertEqual(types(events, leaf), ["value"])
            events = try eventsOf(#"{"op":"set","path":"/leaf/x","value":1}"#)
            XCTAssertEqual(types(events, leaf), ["child_added", "value"])
            events = try eventsOf(#"{"op":"set","path":"/leaf/y","value":1}"#)
            XCTAssertEqual(types(events, leaf), ["child_added"])
            events = try eventsOf(#"{"op":"set","path":"/leaf","value":"s"}"#)
            XCTAssertEqual(types(events, leaf), ["child_removed", "child_removed", "value"])
            // Filtered: never a value, even when the location becomes a leaf.
            events = try eventsOf(#"{"op":"set","path":"/obj","value":9}"#)
            XCTAssertEqual(types(events, filtered), ["child_removed", "child_removed"])
            XCTAssertEqual(types(events, obj), ["child_removed", "child_removed", "value"])
            XCTAssertEqual(types(events, plain), ["child_removed", "child_removed", "value"])
        }
    }

    func testResumeOfALargeLocationSendsOnlyTheChanges() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            var members: [JSONMember] = []
            for i in 0..<10_000 {
                members.append(JSONMember("item\(i)", .object([JSONMember("n", .int(Int64(i)))])))
            }
            try c.request(.object(["op": "set", "path": "/big", "value": .object(members)]))
            let full = try subscribeCache(c, path: "/big")
            XCTAssertEqual(full.lines.count, 10_000)
            let since = try XCTUnwrap(full.response["rev"]?.int64Value)
            var cache = Self.apply(full.lines, to: [:])
            let writer = try TestClient(port: server.port)
            try writer.request(#"{"op":"set","path":"/big/item5/n","value":-5}"#)
            try writer.request(#"{"op":"set","path":"/big/new1","value":{"n":1}}"#)
            try writer.request(#"{"op":"remove","path":"/big/item7"}"#)
            try writer.request(#"{"op":"update","path":"/big","values":{"item8":null,"item9/m":1,"new2":{"n":2}}}"#)
            try writer.request(#"{"op":"set","path":"/big/item5/n","value":-6}"#)
            try writer.request(#"{"op":"set","path":"/elsewhere","value":1}"#)
            try writer.request(#"{"op":"push","path":"/big","value":{"n":3}}"#)
            try writer.request(#"{"op":"set","path":"/big/item10","value":{"n":10}}"#)
            try writer.request(#"{"op":"setPriority","path":"/big/item11","priority":1}"#)
            try writer.request(#"{"op":"remove","path":"/big/new1"}"#)

            let resumed = try subscribeCache(c, path: "/big", since: since)
            XCTAssertEqual(resumed.response["resumed"], .bool(true))
            XCTAssertEqual(resumed.response["initial"], .int(Int64(resumed.lines.count)))
            XCTAssertEqual(resumed.response["rev"], .int(since + 10))
            XCTAssertTrue(resumed.lines.allSatisfy { json($0)["rev"] == .int(since + 10) })
            cache = Self.apply(resumed.lines, to: cache)
            let current = try c.request(#"{"op":"get","path":"/big","format":"export"}"#)["value"]
            XCTAssertEqual(
                JSONValue.object(cache.map { JSONMember($0.key, $0.value) }).sortedMembers, current?.sortedMembers)
            let fullBytes = full.lines.reduce(0) { $0 + $1.utf8.count + 1 }
            let resumedBytes = resumed.lines.reduce(0) { $0 + $1.utf8.count + 1 }
            XCTAssertLessThan(Double(resumedBytes), 0.02 * Double(fullBytes), "\(resumedBytes) of \(fullBytes) bytes")
        }
    }

    /// Random writes to a location watched by limited and ranged queries; resumes from many older
    /// revisions: the events applied in order (each child placed after its `prev`) to the window
    /// as of that revision give the current window, in order.
    func testResumedQueriesMatchAFreshWindow() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let queries = [
                #"{"orderBy":"score","limitToLast":5}"#, #"{"orderBy":"$priority","limitToFirst":4}"#,
                #"{"orderBy":"score","startAt":10,"endAt":30}"#, #"{"orderBy":"$key","startAt":"k3","limitToFirst":3}"#,
            ]
            var random = SeededRandom(seed: 20_240_601)
            var windows: [Int: [Int64: [(key: String, value: JSONValue)]]] = [:]
            func window(_ query: String) throws -> (rev: Int64, entries: [(key: String, value: JSONValue)]) {
                let answer = try c.request(#"{"op":"get","path":"/scores","query":\#(query),"format":"export"}"#)
                let entries = (answer["value"]?.objectMembers ?? []).map { (key: $0.key, value: $0.value) }
                return (try XCTUnwrap(answer["rev"]?.int64Value), entries)
            }
            for step in 0..<150 {
                let key = "k\(random.next(12))"
                let score = random.next(40)
                let line: String
                switch random.next(7) {
                case 0: line = #"{"op":"remove","path":"/scores/\#(key)"}"#
                case 1:
                    let other = "k\(random.next(12))"
                    let removal = other == key ? "" : #","\#(other)":null"#
                    line = #"{"op":"update","path":"/scores","values":{"\#(key)/score":\#(score)\#(removal)}}"#
                case 2: line = #"{"op":"set","path":"/scores/\#(key)/tag","value":\#(step)}"#
                case 3: line = #"{"op":"setPriority","path":"/scores/\#(key)","priority":\#(score)}"#
                case 4:
                    let a = "k\(random.next(12))"
                    let b = "k\(random.next(12))"
                    let values = Set([key, a, b]).sorted().map { #""\#($0)/score":\#(random.next(40))"# }.joined(
                        separator: ",")
                    line = #"{"op":"update","path":"/scores","values":{\#(values)}}"#
                default: line = #"{"op":"set","path":"/scores/\#(key)","value":{"score":\#(score)}}"#
                }
                XCTAssertEqual(try c.request(line)["ok"], .bool(true), line)
                for (index, query) in queries.enumerated() {
                    let (rev, entries) = try window(query)
                    windows[index, default: [:]][rev] = entries
                }
            }
            var resumes = 0
            for (index, query) in queries.enumerated() {
                let (current, expected) = try window(query)
                for (since, old) in (windows[index] ?? [:]).sorted(by: { $0.key < $1.key })
                where since % 5 == 0 || since > current - 3 {
                    let resumed = try subscribeCache(c, path: "/scores", query: query, since: since)
                    XCTAssertEqual(resumed.response["resumed"], .bool(true), "since \(since)")
                    let result = Self.applyOrdered(resumed.lines, to: old)
                    XCTAssertEqual(result.map(\.key), expected.map(\.key), "\(query) since \(since): \(resumed.lines)")
                    XCTAssertEqual(result.map(\.value), expected.map(\.value), "\(query) since \(since)")
                    XCTAssertFalse(resumed.lines.contains { json($0)["event"] == .string("value") })
                    try c.request(.object(["op": "unsubscribe", "sub": resumed.response["sub"] ?? .null]))
                    resumes += 1
                }
            }
            XCTAssertGreaterThan(resumes, 100)
        }
    }

    func testResumeFallbacks() async throws {
        try await withLiveServer(setting: \.changeLogRevisions, to: 3) { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/r","value":{"a":1,"b":2}}"#)  // rev 1
            // Up to date: nothing to send.
            let upToDate = try subscribeCache(c, path: "/r", since: 1)
            XCTAssertEqual(upToDate.response["resumed"], .bool(true))
            XCTAssertEqual(upToDate.response["initial"], .int(0))
            for i in 2...5 { try c.request(#"{"op":"set","path":"/other","value":\#(i)}"#) }  // revs 2…5
            // Nothing after rev 2 touched /r: resumed with no events.
            let untouched = try subscribeCache(c, path: "/r", since: 2)
            XCTAssertEqual(untouched.response["resumed"], .bool(true))
            XCTAssertEqual(untouched.lines, [])
            // Rev 1 is older than the log (revs 3…5): a full initial, no `resumed`.
            let tooOld = try subscribeCache(c, path: "/r", since: 1)
            XCTAssertNil(tooOld.response["resumed"])
            XCTAssertEqual(tooOld.lines.map { json($0)["key"] }, [.string("a"), .string("b")])
            // A revision from the future (another server's?): a full initial too.
            let future = try subscribeCache(c, path: "/r", since: 99)
            XCTAssertNil(future.response["resumed"])
            XCTAssertEqual(future.lines.count, 2)
            // Bad requests.
            XCTAssertEqual(try c.request(#"{"op":"subscribe","path":"/r","since":1}"#).errorCode, "bad_request")
            XCTAssertEqual(
                try c.request(#"{"op":"subscribe","path":"/r","cache":false,"since":1}"#).errorCode, "bad_request")
            XCTAssertEqual(
                try c.request(#"{"op":"subscribe","path":"/r","cache":true,"since":-1}"#).errorCode, "bad_request")
            XCTAssertEqual(
                try c.request(#"{"op":"subscribe","path":"/r","cache":true,"since":1.5}"#).errorCode, "bad_request")
            XCTAssertEqual(try c.request(#"{"op":"subscribe","path":"/r","cache":1}"#).errorCode, "bad_request")
        }
    }

    /// Undo is exact where writes change the shape of the location or its ancestors: a leaf
    /// replaced by children, an object emptied (losing its priority), a write above it.
    func testResumeAcrossShapeChanges() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/s","value":{"loc":{"a":1,".priority":"p"},"sib":1}}"#)
            let plan: [String] = [
                #"{"op":"remove","path":"/s/loc/a"}"#,  // emptied: the priority goes too
                #"{"op":"set","path":"/s/loc","value":"leaf"}"#,
                #"{"op":"set","path":"/s/loc/x/y","value":1}"#,  // the leaf becomes an object
                #"{"op":"setPriority","path":"/s/loc","priority":2}"#,
                #"{"op":"set","path":"/s","value":{"loc":{"b":2}}}"#,  // a write above it
                #"{"op":"set","path":"/s/loc/.priority","value":"q"}"#,
                #"{"op":"update","path":"/s/loc","values":{"b":null,"c/d":3}}"#,
                #"{"op":"remove","path":"/s"}"#,
                #"{"op":"set","path":"/s/loc","value":{".value":5,".priority":1}}"#,
                #"{"op":"set","path":"/s/loc","value":{"a":1,"e":2,".priority":"p"}}"#,
            ]
            var states: [(rev: Int64, value: JSONValue)] = []
            func record() throws {
                let answer = try c.request(#"{"op":"get","path":"/s/loc","format":"export"}"#)
                states.append((try XCTUnwrap(answer["rev"]?.int64Value), answer["value"] ?? .null))
            }
            try record()
            for line in plan {
                try c.request(line)
                try record()
            }
            let current = try XCTUnwrap(states.last)
            for (since, old) in states.dropLast() {
                let resumed = try subscribeCache(c, path: "/s/loc", since: since)
                XCTAssertEqual(resumed.response["resumed"], .bool(true))
                let rebuilt = Self.applyValue(resumed.lines, to: old)
                XCTAssertEqual(rebuilt.sortedMembers, current.value.sortedMembers, "since \(since): \(resumed.lines)")
            }
            // From the first state (the same children but one, the same priority): one event.
            let first = try subscribeCache(c, path: "/s/loc", since: states[0].rev)
            XCTAssertEqual(first.lines.map { json($0)["event"] }, [.string("child_added")])
            XCTAssertEqual(first.lines.map { json($0)["key"] }, [.string("e")])
        }
    }

    /// The change log is in memory: after a restart a resume is a full initial, unless nothing
    /// changed since.
    func testResumeAfterARestartFallsBackToAFullInitial() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var server = try await startServer(directory)
        var c = try TestClient(port: server.port)
        try c.request(#"{"op":"set","path":"/r","value":{"a":1}}"#)
        try c.request(#"{"op":"set","path":"/r/b","value":2}"#)
        await server.shutdown()
        server = try await startServer(directory)
        c = try TestClient(port: server.port)
        XCTAssertEqual(try subscribeCache(c, path: "/r", since: 2).response["resumed"], .bool(true))
        let full = try subscribeCache(c, path: "/r", since: 1)
        XCTAssertNil(full.response["resumed"])
        XCTAssertEqual(full.lines.count, 2)
        try c.request(#"{"op":"set","path":"/r/c","value":3}"#)
        let resumed = try subscribeCache(c, path: "/r", since: 2)
        XCTAssertEqual(resumed.response["resumed"], .bool(true))
        XCTAssertEqual(resumed.lines.map { json($0)["key"] }, [.string("c")])
        await server.shutdown()
    }

    // MARK: Applying events as a cache-mode client would

    /// Applies child events (and `value`) to an unordered cache of children.
    static func apply(_ lines: [String], to cache: [String: JSONValue]) -> [String: JSONValue] {
        var cache = cache
        for line in lines {
            let event = json(line)
            switch event["event"]?.stringValue {
            case "child_added", "child_changed", "child_moved":
                if let key = event["key"]?.stringValue { cache[key] = event["value"] }
            case "child_removed":
                if let key = event["key"]?.stringValue { cache[key] = nil }
            case "value":
                cache = [:]
                for member in event["value"]?.objectMembers ?? [] where member.key != ".priority" {
                    cache[member.key] = member.value
                }
            default: break
            }
        }
        return cache
    }

    /// Applies child events to an ordered window, placing children after their `prev`.
    static func applyOrdered(
        _ lines: [String], to window: [(key: String, value: JSONValue)]
    ) -> [(key: String, value: JSONValue)] {
        var window = window
        func place(_ key: String, _ value: JSONValue, after prev: String?) {
            window.removeAll { $0.key == key }
            let index = prev.flatMap { p in window.firstIndex { $0.key == p }.map { $0 + 1 } } ?? 0
            window.insert((key, value), at: index)
        }
        for line in lines {
            let event = json(line)
            guard let key = event["key"]?.stringValue, let value = event["value"] else { continue }
            switch event["event"]?.stringValue {
            case "child_removed": window.removeAll { $0.key == key }
            case "child_added", "child_moved": place(key, value, after: event["prev"]?.stringValue)
            case "child_changed":
                if let index = window.firstIndex(where: { $0.key == key }) { window[index].value = value }
            default: break
            }
        }
        return window
    }

    /// Applies events to a location's whole value (export format), as an unfiltered cache does.
    static func applyValue(_ lines: [String], to old: JSONValue) -> JSONValue {
        var value = old
        for line in lines {
            let event = json(line)
            var members = value.objectMembers ?? []
            if case .object = value {} else { members = [] }
            switch event["event"]?.stringValue {
            case "value":
                value = event["value"] ?? .null
                continue
            case "child_added", "child_changed", "child_moved":
                guard let key = event["key"]?.stringValue, let child = event["value"] else { continue }
                members.removeAll { $0.key == key }
                members.append(JSONMember(key, child))
            case "child_removed":
                guard let key = event["key"]?.stringValue else { continue }
                members.removeAll { $0.key == key }
            default: continue
            }
            value = members.contains { $0.key != ".priority" } ? .object(members) : .null
        }
        return value
    }
}

extension JSONValue {
    /// The value with object members sorted by key at every level (for order-free comparison).
    var sortedMembers: JSONValue {
        switch self {
        case .object(let members):
            return .object(members.map { JSONMember($0.key, $0.value.sortedMembers) }.sorted { $0.key < $1.key })
        default: return self
        }
    }
}
