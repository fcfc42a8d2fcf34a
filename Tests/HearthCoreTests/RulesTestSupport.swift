import HearthCore
import HearthJSON
import XCTest

/// Helpers shared by the rules tests.
enum RulesTestSupport {
    static let now: Int64 = 1_700_000_000_000

    static let alice = AuthContext(
        uid: "alice", provider: "custom",
        claims: .object([
            "sub": .string("alice"), "admin": .bool(true), "n": .int(3), "nested": .object(["k": .string("v")]),
        ]),
        expiresAt: nil)

    /// Compiles rules text or fails the test.
    static func rules(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> RuleSet? {
        do { return try RuleSet(source: text) } catch {
            XCTFail("rules refused: \(error)", file: file, line: line)
            return nil
        }
    }

    /// The error of a document that must be refused.
    static func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> RulesError? {
        do {
            _ = try RuleSet(source: text)
            XCTFail("accepted: \(text)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// A document whose root `.read` is `expression` (JSON-escaped here).
    static func readDocument(_ expression: String) -> String {
        JSONValue.object(["rules": .object([".read": .string(expression)])]).jsonString
    }

    /// Whether the expression, as the root `.read`, grants a read of `/` over `data`.
    static func holds(
        _ expression: String, data: String = "null", auth: AuthContext? = nil, query: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) -> Bool {
        guard let rules = rules(readDocument(expression), file: file, line: line) else { return false }
        let tree = (try? node(json(data, file: file, line: line))) ?? .empty
        let ruleQuery = query.map { RuleQuery(json: json($0, file: file, line: line)) }
        return rules.checkRead(path: .root, query: ruleQuery, auth: auth, root: tree, now: now).allowed
    }

    /// Whether `set` of `value` at `at` is allowed by `rules` over `data`.
    static func canSet(
        _ rules: RuleSet, _ at: String, _ value: String, data: String = "null", auth: AuthContext? = nil
    ) throws -> RuleVerdict {
        let before = try node(json(data))
        let target = try path(at)
        var database = Database(root: before)
        _ = database.apply(
            .set(path: target, value: try PreparedValue(json(value), at: target, limits: .default)), now: now)
        return rules.checkWrite(targets: [target], before: before, after: database.root, auth: auth, now: now)
    }

    /// Whether `update` of `values` at `at` is allowed.
    static func canUpdate(
        _ rules: RuleSet, _ at: String, _ values: String, data: String = "null", auth: AuthContext? = nil
    ) throws -> RuleVerdict {
        let before = try node(json(data))
        let base = try path(at)
        let entries = try (json(values).objectMembers ?? []).map { member in
            let relative = try Path.parse(member.key)
            return (
                path: relative, value: try PreparedValue(member.value, at: base.appending(relative), limits: .default)
            )
        }
        var database = Database(root: before)
        _ = database.apply(try Write.update(at: base, values: entries), now: now)
        return rules.checkWrite(
            targets: entries.map { base.appending($0.path) }, before: before, after: database.root, auth: auth, now: now
        )
    }
}
