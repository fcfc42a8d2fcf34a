/// A recursive-descent parser of the grammar of docs/rules.md ("Grammar") with JavaScript precedence.
struct ExprParser {
    private let tokens: [ExprToken]
    private var index = 0
    private var nodes = 0
    private var depth = 0
    private let maxNodes: Int

    /// Nesting deeper than this is refused (it bounds the recursion of every later pass).
    static let maxNesting = 256

    init(tokens: [ExprToken], maxNodes: Int) {
        self.tokens = tokens
        self.maxNodes = maxNodes
    }

    /// Parses `text` as exactly one expression.
    static func parse(_ text: String, maxNodes: Int) throws(ExprError) -> ExprSyntax {
        var lexer = ExprLexer(text)
        var parser = ExprParser(tokens: try lexer.tokens(), maxNodes: maxNodes)
        let tree = try parser.expression()
        let rest = parser.current
        guard rest.kind == .end else {
            throw ExprError(
                message: "unexpected \(describe(rest)) after the end of the expression", offset: rest.offset)
        }
        return tree
    }

    private var current: ExprToken { tokens[min(index, tokens.count - 1)] }

    private func isSymbol(_ s: String) -> Bool {
        if case .symbol(let t) = current.kind { return t == s }
        return false
    }

    private mutating func node(_ kind: ExprSyntax.Kind, _ offset: Int) throws(ExprError) -> ExprSyntax {
        nodes += 1
        if nodes > maxNodes {
            throw ExprError(message: "expression has more than \(maxNodes) syntax nodes", offset: offset)
        }
        return ExprSyntax(kind: kind, offset: offset)
    }

    private mutating func expect(_ s: String) throws(ExprError) {
        guard isSymbol(s) else {
            throw ExprError(message: "expected '\(s)' but found \(Self.describe(current))", offset: current.offset)
        }
        index += 1
    }

    private mutating func expression() throws(ExprError) -> ExprSyntax {
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxNesting {
            throw ExprError(
                message: "expression is nested too deeply (more than \(Self.maxNesting) levels)", offset: current.offset
            )
        }
        let condition = try binary(level: 0)
        guard isSymbol("?") else { return condition }
        let offset = current.offset
        index += 1
        let yes = try expression()
        try expect(":")
        let no = try expression()
        return try node(.conditional(condition, yes, no), offset)
    }

    private static let levels: [[String]] = [
        ["||"], ["&&"], ["==", "===", "!=", "!=="], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"],
    ]

    private mutating func binary(level: Int) throws(ExprError) -> ExprSyntax {
        guard level < Self.levels.count else { return try unary() }
        var left = try binary(level: level + 1)
        while case .symbol(let op) = current.kind, Self.levels[level].contains(op) {
            let offset = current.offset
            index += 1
            let right = try binary(level: level + 1)
            left = try node(.binary(op, left, right), offset)
        }
        return left
    }

    private mutating func unary() throws(ExprError) -> ExprSyntax {
        let offset = current.offset
        if isSymbol("!") || isSymbol("-") {
            let negation = isSymbol("!")
            index += 1
            depth += 1
            defer { depth -= 1 }
            if depth > Self.maxNesting {
                throw ExprError(
                    message: "expression is nested too deeply (more than \(Self.maxNesting) levels)", offset: offset)
            }
            let operand = try unary()
            return try node(negation ? .not(operand) : .negate(operand), offset)
        }
        return try postfix()
    }

    private mutating func postfix() throws(ExprError) -> ExprSyntax {
        var value = try primary()
        while true {
            let offset = current.offset
            if isSymbol(".") {
                index += 1
                guard case .identifier(let name) = current.kind else {
                    throw ExprError(
                        message: "expected a member name after '.' but found \(Self.describe(current))",
                        offset: current.offset)
                }
                let nameOffset = current.offset
                index += 1
                value = try node(.member(value, name), nameOffset)
            } else if isSymbol("[") {
                index += 1
                let key = try expression()
                try expect("]")
                if case .string(let name) = key.kind {
                    value = try node(.member(value, name), key.offset)
                } else {
                    value = try node(.index(value, key), offset)
                }
            } else if isSymbol("(") {
                index += 1
                let args = try arguments(closing: ")")
                value = try node(.call(value, args), value.offset)
            } else {
                return value
            }
        }
    }

    private mutating func arguments(closing: String) throws(ExprError) -> [ExprSyntax] {
        var args: [ExprSyntax] = []
        if isSymbol(closing) {
            index += 1
            return args
        }
        while true {
            args.append(try expression())
            if isSymbol(",") {
                index += 1
                continue
            }
            try expect(closing)
            return args
        }
    }

    private mutating func primary() throws(ExprError) -> ExprSyntax {
        let token = current
        switch token.kind {
        case .number(let n):
            index += 1
            return try node(.number(n), token.offset)
        case .string(let s):
            index += 1
            return try node(.string(s), token.offset)
        case .regex(let pattern, let flags):
            index += 1
            return try node(.regex(pattern: pattern, flags: flags), token.offset)
        case .identifier(let name):
            index += 1
            switch name {
            case "true": return try node(.bool(true), token.offset)
            case "false": return try node(.bool(false), token.offset)
            case "null": return try node(.null, token.offset)
            default: return try node(.identifier(name), token.offset)
            }
        case .symbol("("):
            index += 1
            let inner = try expression()
            try expect(")")
            return inner
        case .symbol("["):
            index += 1
            return try node(.array(try arguments(closing: "]")), token.offset)
        case .end:
            throw ExprError(message: "unexpected end of the expression", offset: token.offset)
        case .symbol:
            throw ExprError(message: "unexpected \(Self.describe(token))", offset: token.offset)
        }
    }

    static func describe(_ token: ExprToken) -> String {
        switch token.kind {
        case .number: return "number"
        case .string: return "string"
        case .identifier(let name): return "'\(name)'"
        case .regex: return "regular expression"
        case .symbol(let s): return "'\(s)'"
        case .end: return "end of the expression"
        }
    }
}
