/// Type-checks a parsed expression (docs/rules.md, "Values and types", "Checks at load") and lowers it to an `Expr`.
///
/// Static types are sets of possible kinds (`ValueType`). An operator or method is rejected when
/// no kind its operand may have is acceptable (the expression could only fail at run time);
/// when some kind is acceptable the check is left to run time (docs/rules.md, "Evaluation errors").
struct ExprCompiler {
    enum RuleKind: Sendable {
        case read, write, validate
    }

    let kind: RuleKind
    /// The wildcard names in scope with the depth of the path segment each binds.
    let wildcards: [String: Int]
    let maxRegexLength: Int
    private(set) var referencesData = false
    private var depth = 0

    init(kind: RuleKind, wildcards: [String: Int], maxRegexLength: Int) {
        self.kind = kind
        self.wildcards = wildcards
        self.maxRegexLength = maxRegexLength
    }

    /// Compiles a whole rule, which must be of boolean type.
    mutating func compileRule(_ syntax: ExprSyntax) throws(ExprError) -> Expr {
        let (expr, type) = try compile(syntax)
        guard type.contains(.bool) else {
            throw ExprError(
                message: "a rule must be a boolean expression, but this one is \(type.described)", offset: syntax.offset
            )
        }
        return expr
    }

    private mutating func compile(_ syntax: ExprSyntax) throws(ExprError) -> (Expr, ValueType) {
        depth += 1
        defer { depth -= 1 }
        guard depth <= ExprParser.maxNesting else {
            throw ExprError(
                message: "expression is nested too deeply (more than \(ExprParser.maxNesting) levels)",
                offset: syntax.offset)
        }
        switch syntax.kind {
        case .null: return (.constant(.null), .null)
        case .bool(let b): return (.constant(.bool(b)), .bool)
        case .number(let n): return (.constant(.number(n)), .number)
        case .string(let s): return (.constant(.string(s)), .string)
        case .identifier(let name): return try identifier(name, offset: syntax.offset)
        case .regex:
            throw ExprError(
                message: "a regular expression literal is allowed only as the argument of matches()",
                offset: syntax.offset)
        case .array:
            throw ExprError(
                message: "an array literal is allowed only as the argument of hasChildren()", offset: syntax.offset)
        case .not(let inner):
            let value = try operand(inner, accepting: .bool, for: "!")
            return (.not(value), .bool)
        case .negate(let inner):
            let value = try operand(inner, accepting: .number, for: "unary -")
            return (.negate(value), .number)
        case .binary(let op, let left, let right):
            return try binary(op, left, right)
        case .conditional(let condition, let yes, let no):
            let c = try operand(condition, accepting: .bool, for: "the condition of ?:")
            let (a, ta) = try compile(yes)
            let (b, tb) = try compile(no)
            if ta.isKnown, tb.isKnown, ta != tb, ta != .null, tb != .null {
                throw ExprError(
                    message: "the branches of ?: have different types (\(ta.described) and \(tb.described))",
                    offset: syntax.offset)
            }
            return (.conditional(c, a, b), ta.union(tb))
        case .member(let receiver, let name):
            return try member(receiver, name, offset: syntax.offset)
        case .index(let receiver, let key):
            let (r, tr) = try compile(receiver)
            let (k, tk) = try compile(key)
            guard tr.contains(.map) else {
                throw ExprError(
                    message:
                        "computed member access [...] is only allowed on auth and its claims, not on \(tr.described)",
                    offset: syntax.offset)
            }
            guard !tk.isDisjoint(with: [.string, .number]) else {
                throw ExprError(message: "a member name must be a string, not \(tk.described)", offset: key.offset)
            }
            return (.index(r, k), ValueType.authValue)
        case .call(let callee, let args):
            return try call(callee, args, offset: syntax.offset)
        }
    }

    /// Compiles an operand that must be able to have one of the `accepting` kinds.
    private mutating func operand(
        _ syntax: ExprSyntax, accepting: ValueType, for what: String
    ) throws(ExprError) -> Expr {
        try typedOperand(syntax, accepting: accepting, for: what).0
    }

    private mutating func typedOperand(
        _ syntax: ExprSyntax, accepting: ValueType, for what: String
    ) throws(ExprError) -> (Expr, ValueType) {
        let (expr, type) = try compile(syntax)
        guard !type.isDisjoint(with: accepting) else {
            throw ExprError(
                message: "\(what) needs \(accepting.described), but this operand is \(type.described)",
                offset: syntax.offset)
        }
        return (expr, type)
    }

    private mutating func identifier(_ name: String, offset: Int) throws(ExprError) -> (Expr, ValueType) {
        switch name {
        case "auth": return (.auth, [.null, .map])
        case "now": return (.now, .number)
        case "root":
            referencesData = true
            return (.root, .snapshot)
        case "data":
            referencesData = true
            return (.data, .snapshot)
        case "newData":
            guard kind != .read else {
                throw ExprError(message: "newData is not available in .read rules", offset: offset)
            }
            referencesData = true
            return (.newData, .snapshot)
        case "query": return (.query, .query)
        default:
            if name.hasPrefix("$") {
                guard let depth = wildcards[name] else {
                    throw ExprError(
                        message: "unknown variable \(name): no enclosing wildcard \(name) binds it", offset: offset)
                }
                return (.wildcard(depth: depth), .string)
            }
            let known = ["var", "let", "const", "function", "this", "new", "typeof", "instanceof", "in", "delete"]
            if known.contains(name) {
                throw ExprError(message: "'\(name)' is not supported in rules", offset: offset)
            }
            throw ExprError(
                message:
                    "unknown variable '\(name)' (the variables are auth, now, root, data, newData, query and $wildcards)",
                offset: offset)
        }
    }

    private mutating func binary(
        _ op: String, _ left: ExprSyntax, _ right: ExprSyntax
    ) throws(ExprError) -> (Expr, ValueType) {
        switch op {
        case "&&", "||":
            // Flatten the left-nested chain, so long chains cost no recursion depth.
            var chain = [right]
            var first = left
            while case .binary(let inner, let l, let r) = first.kind, inner == op {
                chain.append(r)
                first = l
            }
            chain.append(first)
            var operands: [Expr] = []
            for syntax in chain.reversed() {
                operands.append(try operand(syntax, accepting: .bool, for: op))
            }
            return (op == "&&" ? .all(operands) : .any(operands), .bool)
        case "==", "===", "!=", "!==":
            let (a, ta) = try compile(left)
            let (b, tb) = try compile(right)
            for (type, side) in [(ta, left), (tb, right)] where type.contains(.snapshot) {
                throw ExprError(
                    message: "a snapshot cannot be compared with \(op); compare its val() or test exists()",
                    offset: side.offset)
            }
            return (.equal(a, b, negated: op.hasPrefix("!")), .bool)
        case "<", "<=", ">", ">=":
            let orderable: ValueType = [.number, .string]
            let (a, ta) = try compile(left)
            let (b, tb) = try compile(right)
            for (type, side) in [(ta, left), (tb, right)] where type.isDisjoint(with: orderable) {
                throw ExprError(
                    message: "\(op) compares two numbers or two strings, not \(type.described)", offset: side.offset)
            }
            if ta.intersection(tb).isDisjoint(with: orderable) {
                throw ExprError(
                    message: "\(op) cannot compare \(ta.described) with \(tb.described)", offset: right.offset)
            }
            let compare: Expr.CompareOperator =
                switch op {
                case "<": .less
                case "<=": .lessOrEqual
                case ">": .greater
                default: .greaterOrEqual
                }
            return (.compare(compare, a, b), .bool)
        case "+":
            let (a, ta) = try typedOperand(left, accepting: [.number, .string], for: "+")
            let (b, tb) = try typedOperand(right, accepting: [.number, .string], for: "+")
            let type: ValueType =
                ta == .number && tb == .number
                ? .number : (ta == .string || tb == .string ? .string : [.number, .string])
            return (.add(a, b), type)
        default:
            let a = try operand(left, accepting: .number, for: op)
            let b = try operand(right, accepting: .number, for: op)
            let arithmetic: Expr.ArithmeticOperator =
                switch op {
                case "-": .subtract
                case "*": .multiply
                case "/": .divide
                default: .remainder
                }
            return (.arithmetic(arithmetic, a, b), .number)
        }
    }

    private mutating func member(
        _ receiver: ExprSyntax, _ name: String, offset: Int
    ) throws(ExprError) -> (Expr, ValueType) {
        let (r, tr) = try compile(receiver)
        if tr == .query {
            guard let field = RuleQuery.Field(name: name) else {
                throw ExprError(
                    message: "query has no member '\(name)' (it has orderByKey, orderByValue, orderByPriority, "
                        + "orderByChild, startAt, endAt, equalTo, limitToFirst, limitToLast)",
                    offset: offset)
            }
            return (.queryField(field), field.staticType)
        }
        var result: ValueType = []
        if tr.contains(.map) { result.formUnion(.authValue) }
        if tr.contains(.string), name == "length" { result.insert(.number) }
        guard !result.isEmpty else {
            if tr.contains(.snapshot), Expr.Method(rawValue: name)?.isSnapshotMethod == true {
                throw ExprError(message: "\(name) is a snapshot method; call it as \(name)()", offset: offset)
            }
            throw ExprError(message: "\(tr.described) has no member '\(name)'", offset: offset)
        }
        if tr.contains(.null) { result.insert(.null) }
        return (.member(r, name), result)
    }

    private mutating func call(
        _ callee: ExprSyntax, _ args: [ExprSyntax], offset: Int
    ) throws(ExprError) -> (Expr, ValueType) {
        guard case .member(let receiver, let name) = callee.kind else {
            throw ExprError(message: "only the built-in methods can be called", offset: offset)
        }
        let (r, tr) = try compile(receiver)
        guard let method = Expr.Method(rawValue: name),
            method.isSnapshotMethod ? tr.contains(.snapshot) : tr.contains(.string)
        else {
            if tr.contains(.snapshot) || tr.contains(.string) || tr.contains(.map) {
                throw ExprError(message: "\(tr.described) has no method '\(name)'", offset: callee.offset)
            }
            throw ExprError(message: "cannot call a method on \(tr.described)", offset: callee.offset)
        }
        let (count, result) = method.signature
        switch method {
        case .hasChildren where !args.isEmpty:
            guard args.count == 1, case .array(let elements) = args[0].kind else {
                throw ExprError(
                    message: "hasChildren takes no argument or one array of child paths, e.g. hasChildren(['a', 'b'])",
                    offset: args[0].offset)
            }
            guard !elements.isEmpty else {
                throw ExprError(message: "hasChildren needs at least one child path", offset: args[0].offset)
            }
            var paths: [Expr.PathArgument] = []
            for element in elements {
                if case .string(let text) = element.kind {
                    paths.append(.keys(childKeys(text)))
                } else {
                    paths.append(.expression(try operand(element, accepting: .string, for: "a hasChildren path")))
                }
            }
            return (.hasChildrenList(r, paths), .bool)
        case .matches:
            guard args.count == 1, case .regex(let pattern, let flags) = args[0].kind else {
                throw ExprError(
                    message: "matches takes one regular expression literal, e.g. matches(/^[a-z]+$/)",
                    offset: args.first?.offset ?? callee.offset)
            }
            guard flags.isEmpty || flags == "i" else {
                throw ExprError(
                    message: "unsupported regular expression flags '\(flags)' (only i is allowed)",
                    offset: args[0].offset)
            }
            let regex: RuleRegex
            do {
                regex = try RuleRegex(pattern, caseInsensitive: flags == "i", maxLength: maxRegexLength)
            } catch {
                throw ExprError(message: error.message, offset: args[0].offset + 1 + error.offset)
            }
            return (.matches(r, regex), .bool)
        default:
            guard args.count == count else {
                let expected = count == 0 ? "no arguments" : count == 1 ? "one argument" : "\(count) arguments"
                throw ExprError(message: "\(name) takes \(expected), not \(args.count)", offset: callee.offset)
            }
            if method == .child || method == .hasChild, case .string(let text) = args[0].kind {
                return (.childPath(r, childKeys(text), test: method == .hasChild), result)
            }
            var compiled: [Expr] = []
            for arg in args {
                compiled.append(try operand(arg, accepting: .string, for: "the argument of \(name)"))
            }
            return (.call(method, r, compiled), result)
        }
    }
}

/// The keys of a child path (docs/rules.md, "Methods"): split on `/`, empty segments dropped. Keys that
/// would be invalid in data are kept; they are simply absent.
func childKeys(_ text: String) -> [Key] {
    text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map {
        Key(String(decoding: $0, as: UTF8.self))
    }
}
