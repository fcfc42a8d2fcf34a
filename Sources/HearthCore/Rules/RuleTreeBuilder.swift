/// Builds the compiled rule tree from the parsed rules file, applying every load-time check of
/// docs/rules.md ("Checks at load") and its limits ("Limits"). Errors name the rule path, line and column.
struct RuleTreeBuilder {
    let bytes: [UInt8]
    let limits: RuleLimits

    /// The root rule node of a whole document `{"rules": {…}}`.
    func build(_ document: SourceValue) throws(RulesError) -> RuleNode {
        guard case .object(let members) = document.kind else {
            throw error("a rules document must be an object with one member \"rules\"", at: document.offset, path: nil)
        }
        var rules: SourceValue?
        for member in members {
            guard member.key == "rules" else {
                throw error(
                    "unknown top-level member \(quoted(member.key)); a rules document has only \"rules\"",
                    at: member.keyOffset, path: "/" + member.key)
            }
            guard rules == nil else { throw error("\"rules\" appears twice", at: member.keyOffset, path: "/rules") }
            rules = member.value
        }
        guard let rules else {
            throw error("a rules document must have a \"rules\" member", at: document.offset, path: nil)
        }
        return try node(rules, displayPath: "", depth: 0, wildcards: [:])
    }

    private func error(_ reason: String, at offset: Int, path: String?) -> RulesError {
        let (line, column) = SourcePosition.lineAndColumn(of: offset, in: bytes)
        return RulesError(reason, rulePath: path, line: line, column: column)
    }

    private func node(
        _ value: SourceValue, displayPath: String, depth: Int, wildcards: [String: Int]
    ) throws(RulesError) -> RuleNode {
        let documentPath = "/rules" + displayPath
        guard case .object(let members) = value.kind else {
            throw error("a rule node must be an object, not \(describe(value))", at: value.offset, path: documentPath)
        }
        guard depth <= limits.maxDepth else {
            throw error(
                "rules are nested deeper than \(limits.maxDepth) levels (the data depth limit)", at: value.offset,
                path: documentPath)
        }
        var read: CompiledRule?
        var write: CompiledRule?
        var validate: CompiledRule?
        var literals: [(Key, RuleNode)] = []
        var wildcard: RuleNode?
        var wildcardName: String?
        var seen: Set<String> = []
        for member in members {
            let memberPath = displayPath + "/" + member.key
            guard seen.insert(member.key).inserted else {
                throw error("\(quoted(member.key)) appears twice", at: member.keyOffset, path: "/rules" + memberPath)
            }
            switch member.key {
            case ".read":
                read = try rule(member.value, kind: .read, rulePath: memberPath, wildcards: wildcards)
            case ".write":
                write = try rule(member.value, kind: .write, rulePath: memberPath, wildcards: wildcards)
            case ".validate":
                validate = try rule(member.value, kind: .validate, rulePath: memberPath, wildcards: wildcards)
            case ".indexOn":
                try checkIndexOn(member.value, path: "/rules" + memberPath)
            default:
                if member.key.hasPrefix(".") {
                    throw error(
                        "unknown rule \(quoted(member.key)); the rules are .read, .write, .validate and .indexOn",
                        at: member.keyOffset, path: "/rules" + memberPath)
                }
                if member.key.hasPrefix("$") {
                    if let wildcardName {
                        throw error(
                            "two wildcards \(wildcardName) and \(member.key) at one level", at: member.keyOffset,
                            path: "/rules" + memberPath)
                    }
                    guard member.key.utf8.count > 1 else {
                        throw error(
                            "a wildcard needs a name after $", at: member.keyOffset, path: "/rules" + memberPath)
                    }
                    guard wildcards[member.key] == nil else {
                        throw error(
                            "the wildcard \(member.key) is already bound by an enclosing rule", at: member.keyOffset,
                            path: "/rules" + memberPath)
                    }
                    var inner = wildcards
                    inner[member.key] = depth
                    wildcardName = member.key
                    wildcard = try node(member.value, displayPath: memberPath, depth: depth + 1, wildcards: inner)
                } else {
                    do {
                        _ = try Key.validated(member.key)
                    } catch {
                        throw self.error(
                            "\(quoted(member.key)) is not a valid key: \(error.message)", at: member.keyOffset,
                            path: "/rules" + memberPath)
                    }
                    let child = try node(member.value, displayPath: memberPath, depth: depth + 1, wildcards: wildcards)
                    literals.append((Key(member.key), child))
                }
            }
        }
        return RuleNode(
            read: read, write: write, validate: validate, literals: literals, wildcard: wildcard,
            displayPath: displayPath.isEmpty ? "/" : displayPath)
    }

    private func checkIndexOn(_ value: SourceValue, path: String) throws(RulesError) {
        switch value.kind {
        case .string: return
        case .array(let items):
            for item in items {
                guard case .string = item.kind else {
                    throw error(".indexOn must list strings, not \(describe(item))", at: item.offset, path: path)
                }
            }
        default:
            throw error(
                ".indexOn must be a string or an array of strings, not \(describe(value))", at: value.offset, path: path
            )
        }
    }

    private func rule(
        _ value: SourceValue, kind: ExprCompiler.RuleKind, rulePath: String, wildcards: [String: Int]
    ) throws(RulesError) -> CompiledRule {
        let documentPath = "/rules" + rulePath
        let name = rulePath.split(separator: "/").last.map(String.init) ?? ""
        switch value.kind {
        case .bool(let b):
            return CompiledRule(
                expr: .constant(.bool(b)), source: b ? "true" : "false", rulePath: rulePath, referencesData: false,
                constant: b)
        case .string(let text):
            guard text.utf8.count <= limits.maxExpressionBytes else {
                throw error(
                    "expression is longer than \(limits.maxExpressionBytes) bytes", at: value.offset, path: documentPath
                )
            }
            var compiler = ExprCompiler(kind: kind, wildcards: wildcards, maxRegexLength: limits.maxRegexLength)
            let expr: Expr
            var constant: Bool?
            do {
                let syntax = try ExprParser.parse(text, maxNodes: limits.maxExpressionNodes)
                if case .bool(let b) = syntax.kind { constant = b }
                expr = try compiler.compileRule(syntax)
            } catch {
                let offset = SourcePosition.offset(ofDecoded: error.offset, inStringAt: value.offset, in: bytes)
                throw self.error(error.message, at: offset, path: documentPath)
            }
            return CompiledRule(
                expr: expr, source: text, rulePath: rulePath, referencesData: compiler.referencesData,
                constant: constant)
        default:
            throw error(
                "\(name) must be a boolean or a string expression, not \(describe(value))", at: value.offset,
                path: documentPath)
        }
    }

    private func describe(_ value: SourceValue) -> String {
        switch value.kind {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
