import HearthCore
import HearthJSON
import XCTest

/// Random trees, rules and operations: `RuleSet` must agree with `RulesReference`, a naive
/// interpreter written separately.
final class RulesPropertyTests: XCTestCase {
    typealias R = RulesReference

    static let keys = ["a", "b", "c", "1"]
    static let strings = ["a", "ab", "b1", "x", ""]

    func testVerdictsMatchTheReference() throws {
        var rng = SplitMix64(seed: 0x5EC0_41E5)
        var checked = (reads: 0, writes: 0, allowed: 0)
        for iteration in 0..<1000 {
            let rules = Self.ruleNode(&rng, depth: 0, bound: [])
            let document = JSONValue.object(["rules": rules.json]).jsonString
            let compiled: RuleSet
            do { compiled = try RuleSet(source: document) } catch {
                XCTFail("#\(iteration): generated rules refused: \(error)\n\(document)")
                return
            }
            let tree = R.pruned(Self.value(&rng, depth: 0))
            let before = try node(tree)
            let uid: String? = rng.chance(0.7) ? rng.pick(["alice", "bob"]) : nil
            let auth = uid.map {
                AuthContext(uid: $0, provider: "custom", claims: .object(["sub": .string($0)]), expiresAt: nil)
            }

            for _ in 0..<4 {
                if rng.chance(0.35) {
                    let location = Self.path(&rng, maxDepth: 3)
                    let expected = R.read(rules, path: location, tree: tree, uid: uid)
                    let verdict = compiled.checkRead(
                        path: Path(location.map(Key.init)), query: nil, auth: auth, root: before, now: 1)
                    XCTAssertEqual(
                        verdict.allowed, expected,
                        "#\(iteration) read /\(location.joined(separator: "/"))\nrules \(document)\ndata \(tree.jsonString)"
                    )
                    checked.reads += 1
                    continue
                }
                let (write, targets, after) = try Self.write(&rng, tree: tree)
                var database = Database(root: before)
                _ = database.apply(write, now: 1)
                XCTAssertEqual(
                    database.root, try node(after), "#\(iteration): the reference applies writes differently")
                let expected = R.write(rules, targets: targets, before: tree, after: after, uid: uid)
                let verdict = compiled.checkWrite(
                    targets: targets.map { Path($0.map(Key.init)) }, before: before, after: database.root, auth: auth,
                    now: 1)
                XCTAssertEqual(
                    verdict.allowed, expected,
                    "#\(iteration) write \(targets) -> \(after.jsonString)\nrules \(document)\ndata \(tree.jsonString)")
                checked.writes += 1
                if expected { checked.allowed += 1 }
            }
        }
        // The generator must exercise both outcomes.
        XCTAssertGreaterThan(checked.allowed, checked.writes / 10)
        XCTAssertLessThan(checked.allowed, checked.writes * 9 / 10)
    }

    // MARK: Generators

    static func path(_ rng: inout SplitMix64, maxDepth: Int) -> [String] {
        (0..<rng.int(0...maxDepth)).map { _ in rng.pick(keys) }
    }

    static func value(_ rng: inout SplitMix64, depth: Int) -> JSONValue {
        if depth < 3, rng.chance(depth == 0 ? 0.9 : 0.45) {
            var members: [JSONMember] = []
            for key in keys where rng.chance(0.5) { members.append(JSONMember(key, value(&rng, depth: depth + 1))) }
            return .object(members)
        }
        switch rng.int(0...4) {
        case 0: return .null
        case 1: return .bool(rng.chance(0.5))
        case 2, 3: return .int(Int64(rng.int(-1...5)))
        default: return .string(rng.pick(strings))
        }
    }

    /// A random write over `tree`: the core write, its targets, and the reference's new tree.
    static func write(_ rng: inout SplitMix64, tree: JSONValue) throws -> (Write, [[String]], JSONValue) {
        if rng.chance(0.3) {
            let base = path(&rng, maxDepth: 2)
            var firsts = keys.filter { _ in rng.chance(0.4) }
            if firsts.isEmpty { firsts = [rng.pick(keys)] }
            var entries: [(path: Path, value: PreparedValue)] = []
            var targets: [[String]] = []
            var after = tree
            for first in firsts {
                let relative = rng.chance(0.3) ? [first, rng.pick(keys)] : [first]
                let value = R.pruned(Self.value(&rng, depth: 1 + relative.count))
                let full = base + relative
                entries.append(
                    (
                        Path(relative.map(Key.init)),
                        try PreparedValue(value, at: Path(full.map(Key.init)), limits: .default)
                    ))
                targets.append(full)
                after = R.setting(after, full[...], value)
            }
            return (try Write.update(at: Path(base.map(Key.init)), values: entries), targets, after)
        }
        let target = path(&rng, maxDepth: 3)
        let value = rng.chance(0.2) ? JSONValue.null : R.pruned(Self.value(&rng, depth: target.count))
        let prepared = try PreparedValue(value, at: Path(target.map(Key.init)), limits: .default)
        return (.set(path: Path(target.map(Key.init)), value: prepared), [target], R.setting(tree, target[...], value))
    }

    static func ruleNode(_ rng: inout SplitMix64, depth: Int, bound: [String]) -> R.RuleNode {
        let node = R.RuleNode()
        if rng.chance(0.35) { node.read = expr(&rng, depth: 0, bound: bound, inRead: true) }
        if depth == 0, rng.chance(0.4) {
            node.write = .constant(true)
        } else if rng.chance(0.4) {
            node.write = expr(&rng, depth: 0, bound: bound, inRead: false)
        }
        if rng.chance(0.25) { node.validate = expr(&rng, depth: 0, bound: bound, inRead: false) }
        guard depth < 3 else { return node }
        for key in keys where rng.chance(0.3) {
            node.children.append((key, ruleNode(&rng, depth: depth + 1, bound: bound)))
        }
        if rng.chance(0.4) {
            let name = "$w\(depth)"
            node.wildcard = (name, ruleNode(&rng, depth: depth + 1, bound: bound + [name]))
        }
        return node
    }

    static func snap(_ rng: inout SplitMix64, inRead: Bool) -> R.Snap {
        var s: R.Snap = rng.pick(inRead ? [.data, .root] : [.data, .newData, .newData, .root])
        for _ in 0..<rng.int(0...2) {
            s =
                rng.chance(0.75)
                ? .child(s, rng.chance(0.2) ? "\(rng.pick(keys))/\(rng.pick(keys))" : rng.pick(keys)) : .parent(s)
        }
        return s
    }

    static func num(_ rng: inout SplitMix64, depth: Int, inRead: Bool) -> R.Num {
        switch depth < 2 ? rng.int(0...5) : rng.int(0...1) {
        case 0: return .literal(rng.int(-1...5))
        case 1: return .val(snap(&rng, inRead: inRead))
        case 2: return .negate(num(&rng, depth: depth + 1, inRead: inRead))
        default:
            return .binary(
                rng.pick(["+", "+", "-", "*", "/", "%"]), num(&rng, depth: depth + 1, inRead: inRead),
                num(&rng, depth: depth + 1, inRead: inRead))
        }
    }

    static func expr(_ rng: inout SplitMix64, depth: Int, bound: [String], inRead: Bool) -> R.Expr {
        let choice = depth < 2 ? rng.int(0...17) : rng.int(0...13)
        switch choice {
        case 0: return .constant(rng.chance(0.6))
        case 1: return rng.chance(0.5) ? .authNotNull : .authUid(rng.pick(["alice", "bob"]))
        case 2:
            guard let name = bound.randomElement(using: &rng) else { return .authNotNull }
            return .wildcard(name, rng.pick(keys))
        case 3: return .exists(snap(&rng, inRead: inRead))
        case 4: return rng.chance(0.5) ? .isNumber(snap(&rng, inRead: inRead)) : .isString(snap(&rng, inRead: inRead))
        case 5: return .hasChildren(snap(&rng, inRead: inRead))
        case 6:
            return .hasChildrenList(snap(&rng, inRead: inRead), (0..<rng.int(1...2)).map { _ in rng.pick(keys) })
        case 7: return .hasChild(snap(&rng, inRead: inRead), rng.pick(keys))
        case 8, 9:
            return .compare(
                rng.pick(["<", "<=", ">", ">=", "==", "!="]), num(&rng, depth: 0, inRead: inRead),
                num(&rng, depth: 0, inRead: inRead))
        case 10:
            let literal: R.Literal =
                switch rng.int(0...3) {
                case 0: .null
                case 1: .bool(rng.chance(0.5))
                case 2: .number(rng.int(-1...5))
                default: .string(rng.pick(strings))
                }
            return .valEquals(snap(&rng, inRead: inRead), literal, negated: rng.chance(0.3))
        case 11: return .beginsWithA(snap(&rng, inRead: inRead))
        case 12: return .contains(snap(&rng, inRead: inRead), rng.pick(strings))
        case 13: return .shorterThan(snap(&rng, inRead: inRead), rng.int(0...3))
        case 14: return .not(expr(&rng, depth: depth + 1, bound: bound, inRead: inRead))
        case 15:
            return .and(
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead),
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead))
        case 16:
            return .or(
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead),
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead))
        default:
            return .conditional(
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead),
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead),
                expr(&rng, depth: depth + 1, bound: bound, inRead: inRead))
        }
    }
}
