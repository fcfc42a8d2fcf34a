/// An evaluation error (docs/rules.md, "Evaluation errors"): it aborts the whole expression, which then counts as
/// false.
struct RuleFault: Error {}

/// Evaluates compiled rules for one operation. The trees, identity, time and query are fixed;
/// the rule's location (`path[0..<depth]`) and the nodes there are set before each rule.
struct RuleEvaluator {
    let auth: AuthContext?
    let now: Double
    let query: RuleQuery
    /// The tree before the operation (`root`, `data`).
    let oldRoot: Node
    /// The tree after the write (`newData`); the old tree for reads.
    let newRoot: Node
    /// Keys of the rule's location: the first `depth` keys.
    var path: [Key]
    var depth: Int
    var dataNode: Node
    var newDataNode: Node

    /// The verdict of one rule: only a boolean `true` counts; errors and other values are false.
    func evaluate(_ rule: CompiledRule) -> Bool {
        if let constant = rule.constant { return constant }
        do {
            if case .bool(true) = try eval(rule.expr) { return true }
            return false
        } catch {
            return false
        }
    }

    func eval(_ expr: Expr) throws(RuleFault) -> RuleValue {
        switch expr {
        case .constant(let value): return value
        case .auth: return auth == nil ? .null : .auth
        case .now: return .number(now)
        case .root: return .snapshot(Snapshot(node: oldRoot, isNew: false, base: path, baseCount: 0, suffix: []))
        case .data: return .snapshot(Snapshot(node: dataNode, isNew: false, base: path, baseCount: depth, suffix: []))
        case .newData:
            return .snapshot(Snapshot(node: newDataNode, isNew: true, base: path, baseCount: depth, suffix: []))
        case .query: return .query
        case .wildcard(let d): return .string(path[d].string)
        case .not(let operand): return .bool(!(try bool(operand)))
        case .negate(let operand):
            guard case .number(let n) = try eval(operand) else { throw RuleFault() }
            return .number(-n)
        case .all(let operands):
            for operand in operands where !(try bool(operand)) { return .bool(false) }
            return .bool(true)
        case .any(let operands):
            for operand in operands where try bool(operand) { return .bool(true) }
            return .bool(false)
        case .conditional(let c, let a, let b): return try bool(c) ? try eval(a) : try eval(b)
        case .equal(let a, let b, let negated): return .bool(try Self.equals(try eval(a), try eval(b)) != negated)
        case .compare(let op, let a, let b): return .bool(try Self.compare(op, try eval(a), try eval(b)))
        case .add(let a, let b): return try Self.add(try eval(a), try eval(b))
        case .arithmetic(let op, let a, let b):
            guard case .number(let x) = try eval(a), case .number(let y) = try eval(b) else { throw RuleFault() }
            switch op {
            case .subtract: return .number(x - y)
            case .multiply: return .number(x * y)
            case .divide: return .number(y == 0 ? .nan : x / y)
            case .remainder: return .number(y == 0 ? .nan : x.truncatingRemainder(dividingBy: y))
            }
        case .member(let receiver, let name): return try member(try eval(receiver), name)
        case .index(let receiver, let key):
            let object = try eval(receiver)
            switch try eval(key) {
            case .string(let name): return try member(object, name)
            case .number(let n): return try member(object, RuleStrings.javaScript(n))
            default: throw RuleFault()
            }
        case .queryField(let field): return query.value(of: field)
        case .childPath(let receiver, let keys, let test):
            if test { return .bool(!(try node(receiver)).descendant(keys).isEmpty) }
            guard case .snapshot(let snapshot) = try eval(receiver) else { throw RuleFault() }
            return .snapshot(snapshot.child(keys))
        case .call(let method, let receiver, let args):
            switch method {
            case .val, .hasChild, .hasChildren, .exists, .getPriority, .isNumber, .isString, .isBoolean:
                return try nodeMethod(method, try node(receiver), args)
            default: return try call(method, try eval(receiver), args)
            }
        case .hasChildrenList(let receiver, let paths):
            let node = try node(receiver)
            var all = true
            for path in paths {
                switch path {
                case .keys(let keys):
                    if all, node.descendant(keys).isEmpty { all = false }
                case .expression(let e):
                    guard case .string(let text) = try eval(e) else { throw RuleFault() }
                    if all, node.descendant(childKeys(text)).isEmpty { all = false }
                }
            }
            return .bool(all)
        case .matches(let receiver, let regex):
            guard case .string(let s) = try eval(receiver) else { throw RuleFault() }
            return .bool(regex.matches(s))
        }
    }

    /// The node of a snapshot-valued expression. Snapshots that are a variable followed by
    /// constant `child()` steps are resolved by walking the node directly, without building a
    /// `Snapshot`.
    private func node(_ expr: Expr) throws(RuleFault) -> Node {
        switch expr {
        case .data: return dataNode
        case .newData: return newDataNode
        case .root: return oldRoot
        case .childPath(let inner, let keys, false): return try node(inner).descendant(keys)
        default:
            guard case .snapshot(let snapshot) = try eval(expr) else { throw RuleFault() }
            return snapshot.node
        }
    }

    /// The snapshot methods that only need the node.
    private func nodeMethod(_ method: Expr.Method, _ node: Node, _ args: [Expr]) throws(RuleFault) -> RuleValue {
        switch method {
        case .val:
            switch node.content {
            case .leaf(let leaf): return RuleValue(leaf: leaf)
            case .children(let map): return map.isEmpty ? .null : .object
            }
        case .hasChild: return .bool(!node.descendant(childKeys(try string(args[0]))).isEmpty)
        case .hasChildren: return .bool(!node.isLeaf && !node.isEmpty)
        case .exists: return .bool(!node.isEmpty)
        case .getPriority:
            switch node.priority {
            case .number(let n)?: return .number(n.doubleValue)
            case .string(let s)?: return .string(s)
            case nil: return .null
            }
        case .isNumber:
            if case .number? = node.leafValue { return .bool(true) }
            return .bool(false)
        case .isString:
            if case .string? = node.leafValue { return .bool(true) }
            return .bool(false)
        case .isBoolean:
            if case .bool? = node.leafValue { return .bool(true) }
            return .bool(false)
        default: throw RuleFault()
        }
    }

    private func bool(_ expr: Expr) throws(RuleFault) -> Bool {
        guard case .bool(let b) = try eval(expr) else { throw RuleFault() }
        return b
    }

    private func string(_ expr: Expr) throws(RuleFault) -> String {
        guard case .string(let s) = try eval(expr) else { throw RuleFault() }
        return s
    }

    private func member(_ value: RuleValue, _ name: String) throws(RuleFault) -> RuleValue {
        switch value {
        case .null: return .null
        case .auth:
            guard let auth else { return .null }
            switch name {
            case "uid": return .string(auth.uid)
            case "provider": return .string(auth.provider)
            case "token": return RuleValue(scalar: auth.claims)
            default: return .null
            }
        case .claim(let json):
            switch json {
            case .object: return json[name].map { RuleValue(scalar: $0) } ?? .null
            case .array(let items):
                guard let i = Int(name), items.indices.contains(i) else { return .null }
                return RuleValue(scalar: items[i])
            default: return .null
            }
        case .string(let s):
            guard name == "length" else { throw RuleFault() }
            return .number(Double(s.utf16.count))
        default: throw RuleFault()
        }
    }

    private func call(_ method: Expr.Method, _ receiver: RuleValue, _ args: [Expr]) throws(RuleFault) -> RuleValue {
        if method.isSnapshotMethod {
            guard case .snapshot(let snapshot) = receiver else { throw RuleFault() }
            switch method {
            case .child: return .snapshot(snapshot.child(childKeys(try string(args[0]))))
            case .parent:
                guard let parent = snapshot.parent(in: snapshot.isNew ? newRoot : oldRoot) else { throw RuleFault() }
                return .snapshot(parent)
            default: return try nodeMethod(method, snapshot.node, args)
            }
        }
        guard case .string(let s) = receiver else { throw RuleFault() }
        switch method {
        case .contains: return .bool(RuleStrings.contains(s, try string(args[0])))
        case .beginsWith: return .bool(RuleStrings.beginsWith(s, try string(args[0])))
        case .endsWith: return .bool(RuleStrings.endsWith(s, try string(args[0])))
        case .replace: return .string(RuleStrings.replace(s, try string(args[0]), try string(args[1])))
        case .toLowerCase: return .string(s.lowercased())
        case .toUpperCase: return .string(s.uppercased())
        default: throw RuleFault()
        }
    }

    /// `==` (docs/rules.md, "Operators"): same type and value; different types are unequal; two maps are an error.
    static func equals(_ a: RuleValue, _ b: RuleValue) throws(RuleFault) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8Equals(y)
        case (.auth, .auth), (.auth, .claim), (.claim, .auth), (.claim, .claim): throw RuleFault()
        case (.snapshot, _), (_, .snapshot): throw RuleFault()
        default: return false
        }
    }

    static func compare(_ op: Expr.CompareOperator, _ a: RuleValue, _ b: RuleValue) throws(RuleFault) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            switch op {
            case .less: return x < y
            case .lessOrEqual: return x <= y
            case .greater: return x > y
            case .greaterOrEqual: return x >= y
            }
        case (.string(let x), .string(let y)):
            let c = compareUTF16(x, y)
            switch op {
            case .less: return c < 0
            case .lessOrEqual: return c <= 0
            case .greater: return c > 0
            case .greaterOrEqual: return c >= 0
            }
        default: throw RuleFault()
        }
    }

    static func add(_ a: RuleValue, _ b: RuleValue) throws(RuleFault) -> RuleValue {
        switch (a, b) {
        case (.number(let x), .number(let y)): return .number(x + y)
        case (.string(let x), .string(let y)): return .string(x + y)
        case (.string(let x), .number(let y)): return .string(x + RuleStrings.javaScript(y))
        case (.number(let x), .string(let y)): return .string(RuleStrings.javaScript(x) + y)
        default: throw RuleFault()
        }
    }
}

extension Node {
    /// The descendant at `keys` (empty when absent).
    func descendant(_ keys: ArraySlice<Key>) -> Node {
        var node = self
        for key in keys {
            node = node.child(key)
            if node.isEmpty { return node }
        }
        return node
    }

    /// The descendant at `keys` (empty when absent).
    func descendant(_ keys: [Key]) -> Node {
        var node = self
        for key in keys {
            node = node.child(key)
            if node.isEmpty { return node }
        }
        return node
    }
}
