/// The two walks of a write check (rules.md §5.1).
extension RuleSet {
    /// A `.validate` that failed, and where.
    struct ValidationFailure {
        let rule: CompiledRule
        let path: Path
    }

    /// Walks the rule chain of `target` from the root and returns the first `.write` that is
    /// true, or nil when none is (or the chain ends first).
    func permission(_ target: Path, _ evaluator: inout RuleEvaluator) -> CompiledRule? {
        let segments = target.segments
        evaluator.path = segments
        evaluator.depth = 0
        evaluator.dataNode = evaluator.oldRoot
        evaluator.newDataNode = evaluator.newRoot
        var node = root
        while true {
            if let write = node.write, evaluator.evaluate(write) { return write }
            guard evaluator.depth < segments.count, let next = node.child(segments[evaluator.depth]) else {
                return nil
            }
            let key = segments[evaluator.depth]
            evaluator.dataNode = evaluator.dataNode.child(key)
            evaluator.newDataNode = evaluator.newDataNode.child(key)
            evaluator.depth += 1
            node = next
        }
    }

    /// Evaluates every `.validate` of §5.1 step 2 for all targets: the ancestors of each target
    /// that exist in the new tree (each once), then every non-null node of each target's new
    /// subtree that has a rule node with `.validate` below it. Returns the first failure.
    func validation(_ targets: [Path], _ evaluator: inout RuleEvaluator) -> ValidationFailure? {
        var validatedAncestors: Set<Path> = []
        for target in targets {
            let segments = target.segments
            evaluator.path = segments
            evaluator.depth = 0
            evaluator.dataNode = evaluator.oldRoot
            evaluator.newDataNode = evaluator.newRoot
            var node = root
            // Ancestors, strictly above the target.
            while evaluator.depth < segments.count {
                if !node.hasValidateBelow { break }
                if let validate = node.validate, !evaluator.newDataNode.isEmpty {
                    var fresh = true
                    if targets.count > 1 {
                        fresh = validatedAncestors.insert(Path(Array(segments[0..<evaluator.depth]))).inserted
                    }
                    if fresh, !evaluator.evaluate(validate) {
                        return ValidationFailure(rule: validate, path: Path(Array(segments[0..<evaluator.depth])))
                    }
                }
                guard let next = node.child(segments[evaluator.depth]) else { break }
                let key = segments[evaluator.depth]
                evaluator.dataNode = evaluator.dataNode.child(key)
                evaluator.newDataNode = evaluator.newDataNode.child(key)
                evaluator.depth += 1
                node = next
            }
            guard evaluator.depth == segments.count, node.hasValidateBelow else { continue }
            if let failure = validateSubtree(node, &evaluator) { return failure }
        }
        return nil
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
