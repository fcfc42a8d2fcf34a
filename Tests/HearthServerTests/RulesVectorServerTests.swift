import Foundation
import HearthJSON
import XCTest

/// Every vector of conformance/rules-vectors.json through the real server: an admin installs the
/// vector's rules with `setRules` and its data, a second connection authenticates as the
/// vector's identity and sends the operation over TCP; the verdict, the value of an allowed read
/// and the data after a denial are checked.
final class RulesVectorServerTests: XCTestCase {
    static let document: JSONValue = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../HearthCoreTests/Resources/rules-vectors.json").standardized
        let data = (try? Data(contentsOf: url)) ?? Data()
        return (try? JSONParser.parse([UInt8](data))) ?? .null
    }()

    func testEveryVectorThroughTheServer() async throws {
        guard case .array(let vectors)? = Self.document["vectors"] else {
            return XCTFail("rules-vectors.json did not load")
        }
        XCTAssertEqual(vectors.count, 207)
        let clock = TestClock()
        let realNow = clock.now
        try await withSecureServer(clock: clock) { server in
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            var failures: [String] = []
            for vector in vectors {
                clock.now = vector["now"]?.int64Value ?? realNow
                if let failure = try await run(vector, admin: admin, port: server.port, now: clock.now) {
                    failures.append("\(vector["name"]?.stringValue ?? "?"): \(failure)")
                }
            }
            XCTAssert(
                failures.isEmpty,
                "\(failures.count) of \(vectors.count) vectors failed:\n" + failures.joined(separator: "\n"))
        }
    }

    func testEveryInvalidRulesDocumentIsRefusedBySetRules() async throws {
        guard case .array(let invalid)? = Self.document["invalidRules"] else {
            return XCTFail("rules-vectors.json did not load")
        }
        XCTAssertEqual(invalid.count, 22)
        try await withSecureServer { server in
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            for entry in invalid {
                let response = try admin.request(.object(["op": "setRules", "rules": entry["rules"] ?? .null]))
                XCTAssertEqual(response.errorCode, "invalid_rules", "\(entry["name"]?.stringValue ?? "?"): \(response)")
            }
            // The server is still open: no invalid document was put in force.
            XCTAssertEqual(try admin.request(#"{"op":"getRules"}"#)["rules"], .null)
        }
    }

    /// Runs one vector; nil when it passed, else what went wrong.
    private func run(_ vector: JSONValue, admin: TestClient, port: Int, now: Int64) async throws -> String? {
        let rules = try admin.request(.object(["op": "setRules", "rules": vector["rules"] ?? .null]))
        guard rules["ok"] == .bool(true) else { return "setRules failed: \(rules)" }
        let seeded = try admin.request(.object(["op": "set", "path": "/", "value": vector["data"] ?? .null]))
        guard seeded["ok"] == .bool(true) else { return "seeding the data failed: \(seeded)" }
        let before = try admin.request(#"{"op":"get","path":"/","format":"export"}"#)["value"]

        let client = try TestClient(port: port)
        defer { client.close() }
        if case .object = vector["auth"] ?? .null, let uid = vector["auth"]?["uid"]?.stringValue {
            let token = try await testToken(uid: uid, claims: vector["auth"]?["token"] ?? .object([]), now: now)
            let auth = try client.request(.object(["op": "auth", "token": .string(token)]))
            guard auth["ok"] == .bool(true) else { return "auth failed: \(auth)" }
        }
        guard case .object(var op)? = vector["op"] else { return "no op" }
        if op.contains(where: { $0.key == "op" && $0.value == .string("transaction") }) {
            let path = vector["op"]?["path"] ?? .string("/")
            let hash = try admin.request(.object(["op": "get", "path": path, "hash": .bool(true)]))["hash"]
            op.append(JSONMember("expectHash", hash ?? .string("")))
        }
        let response = try client.request(.object(op))
        let allowed = response["ok"] == .bool(true)
        let expectAllow = vector["expect"] == .string("allow")
        if expectAllow != allowed {
            return "expected \(expectAllow ? "allow" : "deny"), got \(response)"
        }
        if !allowed {
            guard response.errorCode == "permission_denied" else { return "denied with \(response)" }
            let after = try admin.request(#"{"op":"get","path":"/","format":"export"}"#)["value"]
            if normalized(after ?? .null) != normalized(before ?? .null) {
                return "a denied operation changed the data"
            }
        } else if let expected = vector["expectValue"] {
            if normalized(response["value"] ?? .null) != normalized(expected) {
                return "value \(response["value"]?.jsonString ?? "nil") instead of \(expected.jsonString)"
            }
        }
        return nil
    }
}

/// `value` with object members sorted by key and whole doubles as integers, so that two JSON
/// texts of the same data compare equal.
func normalized(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let members):
        return .object(members.map { JSONMember($0.key, normalized($0.value)) }.sorted { $0.key < $1.key })
    case .array(let items):
        return .array(items.map(normalized))
    case .double(let d) where d.rounded() == d && abs(d) < 1e15:
        return .int(Int64(d))
    default:
        return value
    }
}
