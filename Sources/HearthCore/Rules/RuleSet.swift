public import HearthJSON

/// A compiled rules document (docs/rules.md). Immutable and `Sendable`: compiled once, evaluated many
/// times from any thread. Evaluation copies no trees: snapshots are locations in the trees it is
/// given, and every name, constant path and regex of a rule was resolved when it was compiled.
public struct RuleSet: Sendable {
    let root: RuleNode
    /// The document as parsed (comments dropped), for `getRules`.
    public let document: JSONValue
    /// The `.indexOn` declarations of the same document.
    public let indexRules: IndexRules

    /// Compiles the text of a rules file (Firebase JSON; `//` and `/* */` comments allowed),
    /// applying every load-time check of docs/rules.md ("Checks at load") and its limits ("Limits").
    public init(source: String, limits: RuleLimits = .default) throws(RulesError) {
        let size = source.utf8.count
        guard size <= limits.maxSourceBytes else {
            throw RulesError("the rules file is \(size) bytes; the limit is \(limits.maxSourceBytes) bytes")
        }
        var parser = RulesSourceParser(source)
        let parsed = try parser.parse()
        root = try RuleTreeBuilder(bytes: parser.bytes, limits: limits).build(parsed)
        document = parsed.json
        do {
            indexRules = try IndexRules(json: document)
        } catch {
            throw RulesError(error.message)
        }
    }

    /// Compiles a rules document already parsed as JSON (e.g. from `setRules`). Lines and
    /// columns in errors refer to the document's compact JSON text.
    public init(document: JSONValue, limits: RuleLimits = .default) throws(RulesError) {
        try self.init(source: document.jsonString, limits: limits)
    }

    /// Read check (docs/rules.md, "Checks by operation"): get, shallow, export, hash or subscribe at `path`. The first
    /// `.read` on the rule chain of `path` that is true grants; `query` is the read's query (nil:
    /// none).
    public func checkRead(path: Path, query: RuleQuery?, auth: AuthContext?, root tree: Node, now: Int64) -> RuleVerdict
    {
        let segments = path.segments
        var node = root
        var depth = 0
        // Constant rules need no evaluator; one is made at the first rule that does.
        var evaluator: RuleEvaluator?
        while true {
            if let read = node.read {
                let granted: Bool
                if let constant = read.constant {
                    granted = constant
                } else {
                    if evaluator == nil {
                        let here = tree.descendant(segments[0..<depth])
                        evaluator = RuleEvaluator(
                            auth: auth, now: Double(now), query: query ?? .none, oldRoot: tree, newRoot: tree,
                            path: segments, depth: depth, dataNode: here, newDataNode: here)
                    }
                    granted = evaluator?.evaluate(read) ?? false
                }
                if granted {
                    return RuleVerdict(
                        allowed: true, decidingRule: read.deciding, reason: .readGranted(rule: read.rulePath, at: path))
                }
            }
            guard depth < segments.count, let next = node.child(segments[depth]) else { break }
            if evaluator != nil {
                let child = evaluator?.dataNode.child(segments[depth]) ?? .empty
                evaluator?.dataNode = child
                evaluator?.newDataNode = child
                evaluator?.depth = depth + 1
            }
            depth += 1
            node = next
        }
        return RuleVerdict(allowed: false, decidingRule: nil, reason: .readDenied(at: path))
    }

    /// Write check (docs/rules.md, "Checks by operation"): every target's `.write` chain on (`before`, `after`), and
    /// `.validate` on the ancestors and on the written subtree of each target in `after`. A
    /// target without permission is reported before any failed validation.
    /// `targets` are node paths (never ending in `.priority`); `after` is the whole new tree with
    /// the write applied (server values resolved).
    public func checkWrite(
        targets: [Path], before: Node, after: Node, auth: AuthContext?, now: Int64
    ) -> RuleVerdict {
        guard let first = targets.first else {
            return RuleVerdict(allowed: true, decidingRule: nil, reason: .nothingToWrite)
        }
        var evaluator = RuleEvaluator(
            auth: auth, now: Double(now), query: .none, oldRoot: before, newRoot: after, path: first.segments,
            depth: 0, dataNode: before, newDataNode: after)
        var granting: CompiledRule?
        var walk = WriteWalk(targets: targets.count)
        for target in targets {
            guard let rule = walk.check(target, from: root, &evaluator) else {
                return RuleVerdict(allowed: false, decidingRule: nil, reason: .writeDenied(at: target))
            }
            if granting == nil { granting = rule }
        }
        if let failure = walk.failure {
            return RuleVerdict(
                allowed: false, decidingRule: failure.rule.deciding,
                reason: .validateFailed(rule: failure.rule.rulePath, at: failure.path))
        }
        return RuleVerdict(
            allowed: true, decidingRule: granting?.deciding,
            reason: .writeGranted(rule: granting?.rulePath ?? ".write", at: first, targets: targets.count))
    }

    /// Whether any `.read` rule on the chain of `path` refers to `root` or `data`, so that a
    /// subscription there must be re-checked after writes (docs/security.md, "Where the rules are checked").
    /// A chain with a literal `true` never needs it: that rule always grants.
    public func readDependsOnData(at path: Path) -> Bool {
        var node = root
        var depends = false
        var depth = 0
        while true {
            if let read = node.read {
                if read.constant == true { return false }
                depends = depends || read.referencesData
            }
            guard depth < path.count, let next = node.child(path.segments[depth]) else { return depends }
            node = next
            depth += 1
        }
    }
}
