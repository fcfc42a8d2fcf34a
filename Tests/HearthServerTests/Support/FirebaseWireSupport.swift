import Foundation
import HearthJSON
import XCTest

/// What a Firebase-protocol client knows from the pushes it received: the server data of its
/// default listens (one tree for the whole database, as the SDK's server cache) and, per tag, the
/// window of each tagged query. Pushes are applied as the protocol says: `d` overwrites the value
/// at `p`, `m` sets each relative path of `d` below `p`; a push with `t` touches that query's window
/// only, at its query path or below.
struct WireView {
    private(set) var tree: JSONValue = .null
    private var windows: [Int64: (path: [String], value: JSONValue)] = [:]

    /// Starts tracking the tagged query `tag` listened at `path` (its window starts empty).
    mutating func track(tag: Int64, at path: String) {
        windows[tag] = (wirePath(path), .null)
    }

    /// Applies one push; `d`/`m` without a tag go to the tree, tagged ones to their window.
    mutating func apply(_ push: FirebaseWireClient.Push) {
        guard push.action == "d" || push.action == "m" else { return }
        let path = wirePath(push.path ?? "")
        if let tag = push.tag {
            guard var window = windows[tag] else {
                XCTFail("a push for tag \(tag), which no listen uses: \(push)")
                return
            }
            guard path.starts(with: window.path) else {
                XCTFail("a push for tag \(tag) outside its query path: \(push)")
                return
            }
            let relative = Array(path.dropFirst(window.path.count))
            window.value = Self.applying(push, at: relative, to: window.value)
            windows[tag] = window
        } else {
            tree = Self.applying(push, at: path, to: tree)
        }
    }

    mutating func apply(_ pushes: [FirebaseWireClient.Push]) {
        for push in pushes { apply(push) }
    }

    /// The value at `path` in the default listens' data.
    func value(at path: String) -> JSONValue { Self.value(in: tree, at: wirePath(path)) }

    /// The current window of the tagged query `tag`.
    func window(_ tag: Int64) -> JSONValue { windows[tag]?.value ?? .null }

    private static func applying(_ push: FirebaseWireClient.Push, at path: [String], to root: JSONValue) -> JSONValue {
        if push.action == "d" { return setting(push.data, at: path, in: root) }
        var result = root
        for member in push.data.objectMembers ?? [] {
            result = setting(member.value, at: path + wirePath(member.key), in: result)
        }
        return result
    }

    /// `root` with `value` at `path` (null removes; emptied objects disappear).
    static func setting(_ value: JSONValue, at path: [String], in root: JSONValue) -> JSONValue {
        guard let first = path.first else { return value }
        var members = root.objectMembers ?? []
        let child = members.lastValue(named: first) ?? .null
        let updated = setting(value, at: Array(path.dropFirst()), in: child)
        members.removeAll { $0.key == first }
        if updated != .null && updated != .object([]) { members.append(JSONMember(first, updated)) }
        return members.isEmpty ? .null : .object(members)
    }

    static func value(in root: JSONValue, at path: [String]) -> JSONValue {
        var current = root
        for key in path { current = current[key] ?? .null }
        return current
    }
}

/// The keys of a wire path (`/a/b`, `a/b`, `/` and `` all accepted, as the SDK accepts them).
func wirePath(_ path: String) -> [String] {
    path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
}

/// The same path, written with one leading slash (the protocol allows either form).
func canonicalWirePath(_ path: String?) -> String? {
    path.map { "/" + wirePath($0).joined(separator: "/") }
}

extension FirebaseWireClient {
    /// The path and query of an upgrade as the JS SDK writes them (`extra` goes after `v=5`).
    static func sdkTarget(ns: String? = nil, extra: String = "") -> String {
        "/.ws?v=5\(extra)&p=1:1234567890:web:abcdef" + (ns.map { "&ns=\($0)" } ?? "")
    }

    /// Sends the stats request the SDK sends first and checks its answer.
    func stats(file: StaticString = #filePath, line: UInt = #line) async throws {
        let exchange = try await request("s", #"{"c":{"sdk.js.11-8-0":1}}"#)
        XCTAssertEqual(exchange.response.status, "ok", file: file, line: line)
        XCTAssertEqual(exchange.response.data, "", file: file, line: line)
        XCTAssertEqual(exchange.pushesBefore, [], file: file, line: line)
    }

    /// Reads pushes, applying them to `view`, until `condition` holds; fails after `timeout`.
    func pushes(
        into view: inout WireView, until condition: (WireView) -> Bool, timeout: Double = 10,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [Push] = []
        while !condition(view) {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                XCTFail("the pushes \(seen) did not bring the expected data", file: file, line: line)
                throw Failure(description: "timed out waiting for pushes")
            }
            let push = try await nextPush(timeout: remaining)
            seen.append(push)
            view.apply(push)
        }
    }

    /// Fails when anything but the allowed control messages arrives within `seconds`.
    func expectSilence(
        for seconds: Double = 0.3, _ what: String = "", file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let arrived = try await messages(within: seconds)
        XCTAssertEqual(arrived.map(\.description), [], "expected nothing \(what)", file: file, line: line)
    }
}

/// The seed data of the recorded SDK session that the replay test follows: the list whose
/// last two by score form the window, the counter the transaction finds, and the values `get`
/// and `once` read.
let recordedSessionSeed = #"""
    {"list":{"x":{"score":1},"z":{"score":3},"y":{"score":5}},"counter":5,"b":{"old":true},"seeded":{"hello":"world"}}
    """#

/// Writes `body` at `path` over REST (`PUT path.json`), optionally as the admin.
func restPut(_ port: Int, _ path: String, _ body: String, admin: Bool = false) throws {
    let target = (path.isEmpty ? "/" : path) + ".json" + (admin ? "?auth=\(TestSecrets.admin)" : "")
    let response = try HTTPTestClient(port: port).request("PUT", target, body: body)
    guard response.status == 200 else {
        throw TestClient.Failure(description: "PUT \(path) answered \(response.status): \(response.text)")
    }
}

/// Reads `path` over REST (`GET path.json` + `query`), optionally as the admin.
func restGet(_ port: Int, _ path: String, query: String = "", admin: Bool = false) throws -> JSONValue {
    var target = (path.isEmpty ? "/" : path) + ".json" + (query.isEmpty ? "" : "?" + query)
    if admin { target += (query.isEmpty ? "?" : "&") + "auth=\(TestSecrets.admin)" }
    let response = try HTTPTestClient(port: port).request("GET", target)
    guard response.status == 200 else {
        throw TestClient.Failure(description: "GET \(target) answered \(response.status): \(response.text)")
    }
    return response.json
}

extension FirebaseWireClient {
    /// Sends a request and asserts that its answer is `ok`.
    @discardableResult
    func expectOK(
        _ action: String, _ body: JSONValue, file: StaticString = #filePath, line: UInt = #line
    ) async throws -> Exchange {
        let exchange = try await request(action, body)
        XCTAssertEqual(
            exchange.response.status, "ok", "\(action) \(body.jsonString): \(exchange)", file: file, line: line)
        return exchange
    }

    /// `expectOK` with the body written as JSON text.
    @discardableResult
    func expectOK(
        _ action: String, _ body: String, file: StaticString = #filePath, line: UInt = #line
    ) async throws -> Exchange {
        try await expectOK(action, json(body), file: file, line: line)
    }
}
