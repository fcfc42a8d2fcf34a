/// The walks of a write check (docs/rules.md, "Checks by operation"), one per target: down the rule chain of the target
/// evaluating `.write` until one grants and `.validate` on the ancestors that exist in the new
/// tree, then through the new subtree of the target. Both trees are descended once per target.
struct WriteWalk {
    /// A `.validate` that failed, and where.
    struct ValidationFailure {
        let rule: CompiledRule
        let path: Path
    }

    /// The first failed validation; once set, no more `.validate` is evaluated (permission still
    /// is, so that a denied target is reported first).
    private(set) var failure: ValidationFailure?
    /// Ancestors already validated for an earlier target (only kept for several targets).
    private var validatedAncestors: Set<Path> = []
    private let several: Bool

    init(targets: Int) { several = targets > 1 }

    /// Checks one target; returns the granting `.write`, or nil when none grants (or the chain
    /// ends first).
    mutating func check(_ target: Path, from root: RuleNode, _ evaluator: inout RuleEvaluator) -> CompiledRule? {
        let segments = target.segments
        evaluator.path = segments
        evaluator.depth = 0
        evaluator.dataNode = evaluator.oldRoot
        evaluator.newDataNode = evaluator.newRoot
        var node = root
        var granted: CompiledRule?
        while true {
            if granted == nil, let write = node.write, evaluator.evaluate(write) { granted = write }
            let depth = evaluator.depth
            if depth == segments.count { break }
            // An ancestor, strictly above the target.
            if failure == nil, let validate = node.validate, !evaluator.newDataNode.isEmpty,
                !several || validatedAncestors.insert(Path(Array(segments[0..<depth]))).inserted,
                !evaluator.evaluate(validate)
            {
                failure = ValidationFailure(rule: validate, path: Path(Array(segments[0..<depth])))
            }
            guard let next = node.child(segments[depth]) else { return granted }
            if granted != nil, failure != nil || !next.hasValidateBelow { return granted }
            let key = segments[depth]
            evaluator.dataNode = evaluator.dataNode.child(key)
            evaluator.newDataNode = evaluator.newDataNode.child(key)
            evaluator.depth = depth + 1
            node = next
        }
        guard granted != nil else { return nil }
        if failure == nil, node.hasValidateBelow { failure = validateSubtree(node, &evaluator) }
        return granted
    }

    /// Validates the node at the evaluator's location and its new subtree. The evaluator's path
    /// is exactly that location (`depth == path.count`); it is restored on return.
    private func validateSubtree(_ node: RuleNode, _ evaluator: inout RuleEvaluator) -> ValidationFailure? {
        let newNode = evaluator.newDataNode
        guard !newNode.isEmpty else { return nil }
        if let validate = node.validate, !evaluator.evaluate(validate) {
            return ValidationFailure(rule: validate, path: Path(Array(evaluator.path[0..<evaluator.depth])))
        }
        guard case .children(let children) = newNode.content else { return nil }
        let oldNode = evaluator.dataNode
        defer {
            evaluator.dataNode = oldNode
            evaluator.newDataNode = newNode
        }
        if let wildcard = node.wildcard, wildcard.hasValidateBelow {
            // Every written child has a rule node: the literal one or the wildcard.
            for (key, child) in children {
                let rule = node.literal(key) ?? wildcard
                guard rule.hasValidateBelow else { continue }
                if let failure = descend(rule, key, child, oldNode, &evaluator) { return failure }
            }
        } else if node.hasLiterals {
            for (key, rule) in node.literals where rule.hasValidateBelow {
                let child = newNode.child(key)
                if child.isEmpty { continue }
                if let failure = descend(rule, key, child, oldNode, &evaluator) { return failure }
            }
        }
        return nil
    }

    private func descend(
        _ rule: RuleNode, _ key: Key, _ child: Node, _ oldParent: Node, _ evaluator: inout RuleEvaluator
    ) -> ValidationFailure? {
        evaluator.path.removeSubrange(evaluator.depth...)
        evaluator.path.append(key)
        evaluator.depth += 1
        evaluator.dataNode = oldParent.child(key)
        evaluator.newDataNode = child
        let failure = validateSubtree(rule, &evaluator)
        evaluator.depth -= 1
        return failure
    }
}
