import Foundation
import HearthCore
import HearthJSON
import XCTest

/// The rules conformance vectors (conformance/rules-vectors.json): the project's copy, checked
/// against ../shared when that exists.
enum RulesVectors {
    static let projectCopy = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/rules-vectors.json")
    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../shared/conformance/rules-vectors.json").standardized

    static let all: JSONValue = {
        let data = (try? Data(contentsOf: projectCopy)) ?? Data()
        return (try? JSONParser.parse([UInt8](data))) ?? .null
    }()

    static func list(_ name: String) -> [JSONValue] {
        if case .array(let items)? = all[name] { return items }
        return []
    }

    /// The identity of a vector's `auth`: sub = uid, provider = token.provider or "custom".
    static func auth(_ json: JSONValue?) -> AuthContext? {
        guard let json, case .string(let uid)? = json["uid"] else { return nil }
        var claims = json["token"]?.objectMembers ?? []
        claims.removeAll { $0.key == "sub" }
        claims.append(JSONMember("sub", .string(uid)))
        let provider = json["token"]?["provider"]?.stringValue ?? "custom"
        return AuthContext(uid: uid, provider: provider, claims: .object(claims), expiresAt: nil)
    }
}

/// What a vector's operation does to the tree: the targets to check and the write to apply.
struct RulesVectorWrite {
    var targets: [Path]
    var write: Write

    /// Builds the write of a vector's op (`set`, `update`, `remove`, `push`, `setPriority`,
    /// `transaction`, or an `onDisconnect` action), as the server would.
    init(op: JSONValue, kind: String, current: Node, now: Int64) throws {
        let target = try path(op["path"]?.stringValue ?? "/")
        let value = op["value"] ?? .null
        switch kind {
        case "set":
            var json = value
            if let priority = op["priority"] {
                if case .object(var members) = value {
                    members.append(JSONMember(".priority", priority))
                    json = .object(members)
                } else {
                    json = .object([JSONMember(".value", value), JSONMember(".priority", priority)])
                }
            }
            targets = [target]
            write = .set(path: target, value: try PreparedValue(json, at: target, limits: .default))
        case "remove":
            targets = [target]
            write = .set(path: target, value: PreparedValue(node: .empty))
        case "push":
            var generator = PushIDGenerator()
            let child = target.appending(Key(generator.next(now: now)))
            targets = [child]
            write = .set(path: child, value: try PreparedValue(value, at: child, limits: .default))
        case "setPriority":
            targets = [target]
            write = .set(
                path: target.appending(Key.priority),
                value: try PreparedValue(op["priority"] ?? .null, at: target, limits: .default))
        case "update":
            let members = (op["values"] ?? value).objectMembers ?? []
            let values = try members.map { member in
                let relative = try Path.parse(member.key)
                return (
                    path: relative,
                    value: try PreparedValue(member.value, at: target.appending(relative), limits: .default)
                )
            }
            targets = values.map { target.appending($0.path) }
            write = try Write.update(at: target, values: values)
        case "transaction":
            targets = [target]
            write = .transaction(
                path: target, value: try PreparedValue(value, at: target, limits: .default),
                expectation: .value(current.child(at: target), comparePriorities: false), valueHasPriority: false)
        default:
            throw DatabaseError(.badRequest, "unknown vector op \(kind)")
        }
    }
}

final class RulesVectorTests: XCTestCase {
    func testProjectCopyOfRulesVectorsMatchesShared() throws {
        XCTAssertNotEqual(RulesVectors.all, .null, "rules-vectors.json did not load")
        guard FileManager.default.fileExists(atPath: RulesVectors.shared.path) else {
            throw XCTSkip("../shared is not beside this checkout")
        }
        let shared = try JSONParser.parse([UInt8](Data(contentsOf: RulesVectors.shared)))
        XCTAssertEqual(
            shared, RulesVectors.all,
            "Tests/HearthCoreTests/Resources/rules-vectors.json is stale: copy it from shared/")
    }

    func testInvalidRulesAreRefused() {
        let vectors = RulesVectors.list("invalidRules")
        XCTAssertEqual(vectors.count, 22)
        for vector in vectors {
            let name = vector["name"]?.stringValue ?? "?"
            let text = (vector["rules"] ?? .null).jsonString
            do {
                _ = try RuleSet(source: text)
                XCTFail("accepted: \(name): \(text)")
            } catch {
                XCTAssertFalse(error.message.isEmpty, name)
            }
        }
    }

    func testVectors() throws {
        let vectors = RulesVectors.list("vectors")
        XCTAssertEqual(vectors.count, 207)
        var passed = 0
        for vector in vectors {
            if try run(vector) { passed += 1 }
        }
        XCTAssertEqual(passed, vectors.count)
    }

    /// Runs one vector; true when it passed.
    func run(_ vector: JSONValue) throws -> Bool {
        let name = vector["name"]?.stringValue ?? "?"
        let rules: RuleSet
        do {
            rules = try RuleSet(source: (vector["rules"] ?? .null).jsonString)
        } catch {
            XCTFail("\(name): rules refused: \(error)")
            return false
        }
        let data = try node(vector["data"] ?? .null)
        let auth = RulesVectors.auth(vector["auth"])
        let now = vector["now"]?.int64Value ?? 1_700_000_000_000
        let op = vector["op"] ?? .null
        let expectAllow = vector["expect"]?.stringValue == "allow"
        var kind = op["op"]?.stringValue ?? "?"
        if kind == "onDisconnect" { kind = op["action"]?.stringValue ?? "?" }

        if kind == "get" {
            let target = try path(op["path"]?.stringValue ?? "/")
            let query = op["query"].map { RuleQuery(json: $0) }
            let verdict = rules.checkRead(path: target, query: query, auth: auth, root: data, now: now)
            guard verdict.allowed == expectAllow else {
                XCTFail("\(name): expected \(expectAllow ? "allow" : "deny"): \(verdict.explanation)")
                return false
            }
            guard verdict.allowed, let expected = vector["expectValue"] else { return true }
            let location = data.child(at: target)
            var value = location
            if let wire = op["query"] {
                let spec = try QuerySpec(json: wire, limits: .default)
                var children = ChildMap()
                for (key, child) in QueryEvaluator.window(spec, of: location, index: nil) {
                    children.insert(key, child)
                }
                value = .object(children)
            }
            let expectedNode = try node(expected)
            guard value.strippingPriorities() == expectedNode.strippingPriorities() else {
                XCTFail("\(name): value \(value.jsonValue().jsonString), expected \(expected.jsonString)")
                return false
            }
            return true
        }

        let write = try RulesVectorWrite(op: op, kind: kind, current: data, now: now)
        var database = Database(root: data)
        let after: Node
        switch database.apply(write.write, now: now) {
        case .committed: after = database.root
        case .stale:
            XCTFail("\(name): the transaction's expectation did not match")
            return false
        }
        let verdict = rules.checkWrite(targets: write.targets, before: data, after: after, auth: auth, now: now)
        guard verdict.allowed == expectAllow else {
            XCTFail("\(name): expected \(expectAllow ? "allow" : "deny"): \(verdict.explanation)")
            return false
        }
        return true
    }
}
