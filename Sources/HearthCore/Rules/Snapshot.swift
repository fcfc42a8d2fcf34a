/// A `RuleSnapshot` (docs/rules.md, "Methods"): a location in one of the two trees of an operation (before
/// or after), with the node there.
///
/// The location is kept without building a path: the first `baseCount` keys of `base` (the
/// rule's location, shared with the evaluation) followed by `suffix` (keys added by `child()`,
/// often a constant array of the compiled rule). Nothing is copied until `parent()` or a second
/// `child()` needs it.
struct Snapshot: Sendable {
    var node: Node
    /// In the tree after the write (`newData`), else before (`root`, `data`).
    var isNew: Bool
    var base: [Key]
    var baseCount: Int
    var suffix: [Key]

    /// The snapshot at `keys` below this one.
    func child(_ keys: [Key]) -> Snapshot {
        var result = self
        result.node = node.descendant(keys)
        if result.suffix.isEmpty {
            result.suffix = keys
        } else {
            result.suffix.append(contentsOf: keys)
        }
        return result
    }

    /// The parent location, re-read from `tree`; nil at the root.
    func parent(in tree: Node) -> Snapshot? {
        var result = self
        if !result.suffix.isEmpty {
            result.suffix.removeLast()
        } else if result.baseCount > 0 {
            result.baseCount -= 1
        } else {
            return nil
        }
        var node = tree
        for key in result.base[0..<result.baseCount] {
            node = node.child(key)
            if node.isEmpty { break }
        }
        if !node.isEmpty {
            for key in result.suffix {
                node = node.child(key)
                if node.isEmpty { break }
            }
        }
        result.node = node
        return result
    }
}
