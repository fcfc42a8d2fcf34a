import HearthCore
import HearthJSON

/// A naive reference for `RulesPropertyTests`: rule trees and expressions as small test-side
/// syntax trees (rendered to text for `RuleSet`), evaluated by direct recursion over plain JSON
/// data, with the rule chain looked up from the root for every location. It shares nothing with
/// the compiler and evaluator under test.
enum RulesReference {
    /// A rule node of a generated document.
    final class RuleNode {
        var read: Expr?
        var write: Expr?
        var validate: Expr?
        var children: [(String, RuleNode)] = []
        var wildcard: (String, RuleNode)?

        var json: JSONValue {
            var members: [JSONMember] = []
            if let read { members.append(JSONMember(".read", read.ruleJSON)) }
            if let write { members.append(JSONMember(".write", write.ruleJSON)) }
            if let validate { members.append(JSONMember(".validate", validate.ruleJSON)) }
            for (key, child) in children { members.append(JSONMember(key, child.json)) }
            if let (name, child) = wildcard { members.append(JSONMember(name, child.json)) }
            return .object(members)
        }
    }

    indirect enum Snap {
        case root, data, newData
        case child(Snap, String)
        case parent(Snap)

        var text: String {
            switch self {
            case .root: return "root"
            case .data: return "data"
            case .newData: return "newData"
            case .child(let s, let p): return "\(s.text).child('\(p)')"
            case .parent(let s): return "\(s.text).parent()"
            }
        }
    }

    indirect enum Num {
        case literal(Int)
        case val(Snap)
        case binary(String, Num, Num)
        case negate(Num)

        var text: String {
            switch self {
            case .literal(let n): return String(n)
            case .val(let s): return "\(s.text).val()"
            case .binary(let op, let a, let b): return "(\(a.text) \(op) \(b.text))"
            case .negate(let a): return "-(\(a.text))"
            }
        }
    }

    enum Literal {
        case null
        case bool(Bool)
        case number(Int)
        case string(String)

        var text: String {
            switch self {
            case .null: return "null"
            case .bool(let b): return b ? "true" : "false"
            case .number(let n): return String(n)
            case .string(let s): return "'\(s)'"
            }
        }
    }

    indirect enum Expr {
        case constant(Bool)
        case authNotNull
        case authUid(String)
        case wildcard(String, String)
        case exists(Snap)
        case isNumber(Snap)
        case isString(Snap)
        case hasChildren(Snap)
        case hasChildrenList(Snap, [String])
        case hasChild(Snap, String)
        case compare(String, Num, Num)
        case valEquals(Snap, Literal, negated: Bool)
        case beginsWithA(Snap)
        case contains(Snap, String)
        case shorterThan(Snap, Int)
        case not(Expr)
        case and(Expr, Expr)
        case or(Expr, Expr)
        case conditional(Expr, Expr, Expr)

        var text: String {
            switch self {
            case .constant(let b): return b ? "true" : "false"
            case .authNotNull: return "auth != null"
            case .authUid(let uid): return "auth.uid == '\(uid)'"
            case .wildcard(let name, let value): return "\(name) == '\(value)'"
            case .exists(let s): return "\(s.text).exists()"
            case .isNumber(let s): return "\(s.text).isNumber()"
            case .isString(let s): return "\(s.text).isString()"
            case .hasChildren(let s): return "\(s.text).hasChildren()"
            case .hasChildrenList(let s, let keys):
                return "\(s.text).hasChildren([\(keys.map { "'\($0)'" }.joined(separator: ", "))])"
            case .hasChild(let s, let p): return "\(s.text).hasChild('\(p)')"
            case .compare(let op, let a, let b): return "\(a.text) \(op) \(b.text)"
            case .valEquals(let s, let literal, let negated):
                return "\(s.text).val() \(negated ? "!=" : "==") \(literal.text)"
            case .beginsWithA(let s): return "\(s.text).val().matches(/^a/)"
            case .contains(let s, let t): return "\(s.text).val().contains('\(t)')"
            case .shorterThan(let s, let n): return "\(s.text).val().length < \(n)"
            case .not(let e): return "!(\(e.text))"
            case .and(let a, let b): return "(\(a.text)) && (\(b.text))"
            case .or(let a, let b): return "(\(a.text)) || (\(b.text))"
            case .conditional(let c, let a, let b): return "(\(c.text)) ? (\(a.text)) : (\(b.text))"
            }
        }

        var ruleJSON: JSONValue {
            if case .constant(let b) = self { return .bool(b) }
            return .string(text)
        }
    }

    // MARK: Data

    /// The value at `path` of a plain JSON tree (null when absent).
    static func value(_ tree: JSONValue, _ path: [String]) -> JSONValue {
        var node = tree
        for key in path {
            guard case .object = node, let child = node[key] else { return .null }
            node = child
        }
        return node
    }

    /// `value` without nulls and empty objects.
    static func pruned(_ value: JSONValue) -> JSONValue {
        guard case .object(let members) = value else { return value }
        let kept = members.compactMap { m -> JSONMember? in
            let v = pruned(m.value)
            return v == .null ? nil : JSONMember(m.key, v)
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    /// `tree` with `value` placed at `path` (empty parents disappear: docs/PROTOCOL.md, "Values").
    static func setting(_ tree: JSONValue, _ path: ArraySlice<String>, _ value: JSONValue) -> JSONValue {
        guard let key = path.first else { return pruned(value) }
        let child = setting(self.value(tree, [key]), path.dropFirst(), value)
        var members: [JSONMember]
        if case .object(let existing) = tree {
            members = existing.filter { $0.key != key }
        } else {
            if child == .null { return tree }
            members = []
        }
        if child != .null { members.append(JSONMember(key, child)) }
        return members.isEmpty ? .null : .object(members)
    }

    /// Every path of the non-null nodes of `tree` below `base` (base included).
    static func paths(_ tree: JSONValue, under base: [String]) -> [[String]] {
        let node = value(tree, base)
        guard node != .null else { return [] }
        var result = [base]
        if case .object(let members) = node {
            for m in members { result += paths(tree, under: base + [m.key]) }
        }
        return result
    }

    // MARK: Rules

    /// The rule node for `path` with the wildcard bindings on the way, or nil where the chain ends.
    static func ruleNode(_ root: RuleNode, _ path: [String]) -> (RuleNode, [String: String])? {
        var node = root
        var bindings: [String: String] = [:]
        for key in path {
            if let literal = node.children.first(where: { $0.0 == key }) {
                node = literal.1
            } else if let (name, child) = node.wildcard {
                bindings[name] = key
                node = child
            } else {
                return nil
            }
        }
        return (node, bindings)
    }

    struct Context {
        var before: JSONValue
        var after: JSONValue
        var location: [String]
        var bindings: [String: String]
        var uid: String?
    }

    static func read(_ rules: RuleNode, path: [String], tree: JSONValue, uid: String?) -> Bool {
        for depth in 0...path.count {
            guard let (node, bindings) = ruleNode(rules, Array(path.prefix(depth))) else { return false }
            let context = Context(
                before: tree, after: tree, location: Array(path.prefix(depth)), bindings: bindings, uid: uid)
            if let read = node.read, holds(read, context) { return true }
        }
        return false
    }

    static func write(
        _ rules: RuleNode, targets: [[String]], before: JSONValue, after: JSONValue, uid: String?
    ) -> Bool {
        for target in targets {
            var granted = false
            for depth in 0...target.count {
                let location = Array(target.prefix(depth))
                guard let (node, bindings) = ruleNode(rules, location) else { break }
                let context = Context(before: before, after: after, location: location, bindings: bindings, uid: uid)
                if let write = node.write, holds(write, context) {
                    granted = true
                    break
                }
            }
            if !granted { return false }
        }
        var locations: [[String]] = []
        for target in targets {
            for depth in 0..<target.count { locations.append(Array(target.prefix(depth))) }
            locations += paths(after, under: target)
        }
        var seen: Set<[String]> = []
        for location in locations where seen.insert(location).inserted {
            guard value(after, location) != .null, let (node, bindings) = ruleNode(rules, location),
                let validate = node.validate
            else { continue }
            let context = Context(before: before, after: after, location: location, bindings: bindings, uid: uid)
            if !holds(validate, context) { return false }
        }
        return true
    }

    // MARK: Expressions

    struct Failure: Error {}

    enum Value: Equatable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case object
    }

    static func holds(_ expr: Expr, _ context: Context) -> Bool {
        (try? evaluate(expr, context)) == true
    }

    static func snapshot(_ snap: Snap, _ c: Context) throws(Failure) -> (tree: JSONValue, path: [String]) {
        switch snap {
        case .root: return (c.before, [])
        case .data: return (c.before, c.location)
        case .newData: return (c.after, c.location)
        case .child(let s, let p):
            let (tree, path) = try snapshot(s, c)
            return (tree, path + p.split(separator: "/").map(String.init))
        case .parent(let s):
            let (tree, path) = try snapshot(s, c)
            guard !path.isEmpty else { throw Failure() }
            return (tree, Array(path.dropLast()))
        }
    }

    static func val(_ snap: Snap, _ c: Context) throws(Failure) -> Value {
        let (tree, path) = try snapshot(snap, c)
        switch value(tree, path) {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .number(Double(i))
        case .double(let d): return .number(d)
        case .string(let s): return .string(s)
        case .object, .array: return .object
        }
    }

    static func text(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d > 0 ? "Infinity" : "-Infinity" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return "\(d)"
    }

    static func number(_ num: Num, _ c: Context) throws(Failure) -> Value {
        switch num {
        case .literal(let n): return .number(Double(n))
        case .val(let s): return try val(s, c)
        case .negate(let a):
            guard case .number(let x) = try number(a, c) else { throw Failure() }
            return .number(-x)
        case .binary(let op, let a, let b):
            let x = try number(a, c)
            let y = try number(b, c)
            if op == "+" {
                switch (x, y) {
                case (.number(let p), .number(let q)): return .number(p + q)
                case (.string(let p), .string(let q)): return .string(p + q)
                case (.string(let p), .number(let q)): return .string(p + text(q))
                case (.number(let p), .string(let q)): return .string(text(p) + q)
                default: throw Failure()
                }
            }
            guard case .number(let p) = x, case .number(let q) = y else { throw Failure() }
            switch op {
            case "-": return .number(p - q)
            case "*": return .number(p * q)
            case "/": return .number(q == 0 ? .nan : p / q)
            default: return .number(q == 0 ? .nan : p.truncatingRemainder(dividingBy: q))
            }
        }
    }

    static func evaluate(_ expr: Expr, _ c: Context) throws(Failure) -> Bool {
        switch expr {
        case .constant(let b): return b
        case .authNotNull: return c.uid != nil
        case .authUid(let uid): return c.uid == uid
        case .wildcard(let name, let v): return c.bindings[name] == v
        case .exists(let s): return try val(s, c) != .null
        case .isNumber(let s):
            if case .number = try val(s, c) { return true }
            return false
        case .isString(let s):
            if case .string = try val(s, c) { return true }
            return false
        case .hasChildren(let s): return try val(s, c) == .object
        case .hasChildrenList(let s, let keys):
            for key in keys where try val(.child(s, key), c) == .null { return false }
            return true
        case .hasChild(let s, let p): return try val(.child(s, p), c) != .null
        case .compare(let op, let a, let b):
            let x = try number(a, c)
            let y = try number(b, c)
            if op == "==" || op == "!=" {
                let equal: Bool
                switch (x, y) {
                case (.null, .null): equal = true
                case (.bool(let p), .bool(let q)): equal = p == q
                case (.number(let p), .number(let q)): equal = p == q
                case (.string(let p), .string(let q)): equal = Array(p.utf16) == Array(q.utf16)
                default: equal = false
                }
                return op == "==" ? equal : !equal
            }
            switch (x, y) {
            case (.number(let p), .number(let q)):
                return op == "<" ? p < q : op == "<=" ? p <= q : op == ">" ? p > q : p >= q
            case (.string(let p), .string(let q)):
                let (u, v) = (Array(p.utf16), Array(q.utf16))
                let less = u.lexicographicallyPrecedes(v)
                let greater = v.lexicographicallyPrecedes(u)
                return op == "<" ? less : op == "<=" ? !greater : op == ">" ? greater : !less
            default: throw Failure()
            }
        case .valEquals(let s, let literal, let negated):
            let v = try val(s, c)
            let equal: Bool
            switch (v, literal) {
            case (.null, .null): equal = true
            case (.bool(let p), .bool(let q)): equal = p == q
            case (.number(let p), .number(let q)): equal = p == Double(q)
            case (.string(let p), .string(let q)): equal = p == q
            default: equal = false
            }
            return equal != negated
        case .beginsWithA(let s):
            guard case .string(let v) = try val(s, c) else { throw Failure() }
            return v.hasPrefix("a")
        case .contains(let s, let t):
            guard case .string(let v) = try val(s, c) else { throw Failure() }
            let (u, w) = (Array(v.utf8), Array(t.utf8))
            if w.isEmpty { return true }
            guard u.count >= w.count else { return false }
            for i in 0...(u.count - w.count) where Array(u[i..<i + w.count]) == w { return true }
            return false
        case .shorterThan(let s, let n):
            guard case .string(let v) = try val(s, c) else { throw Failure() }
            return v.utf16.count < n
        case .not(let e): return !(try evaluate(e, c))
        case .and(let a, let b): return try evaluate(a, c) ? try evaluate(b, c) : false
        case .or(let a, let b): return try evaluate(a, c) ? true : try evaluate(b, c)
        case .conditional(let cond, let a, let b):
            return try evaluate(cond, c) ? try evaluate(a, c) : try evaluate(b, c)
        }
    }
}
