/// A validated write, ready for the engine (docs/PROTOCOL.md, "Operations").
public enum Write: Sendable {
    /// Replace the node at `path` (an empty value deletes; a last segment `.priority` sets the
    /// parent's priority). Covers `set`, `remove`, `push` and `setPriority`.
    case set(path: Path, value: PreparedValue)
    /// Atomic multi-path merge: each relative path's node is replaced. No path is an ancestor of
    /// another (checked by `Write.update(at:values:)`).
    case update(path: Path, values: [(path: Path, value: PreparedValue)])
    /// Compare-and-set: write `value` when the node at `path` matches `expectation`. The current
    /// priority is kept unless `value` carries one.
    case transaction(path: Path, value: PreparedValue, expectation: TransactionExpectation, valueHasPriority: Bool)
    /// Overwrites applied in order as one atomic write (onDisconnect operations).
    case overwrites([(path: Path, value: PreparedValue)])

    /// Builds an update, rejecting a path that is an ancestor of (or equal to) another.
    public static func update(
        at path: Path, values: [(path: Path, value: PreparedValue)]
    ) throws(DatabaseError) -> Write {
        let sorted = values.map(\.path).sorted { a, b in
            for (x, y) in zip(a.segments, b.segments) {
                let c = Key.compare(x, y)
                if c != 0 { return c < 0 }
            }
            return a.count < b.count
        }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.contains(b) {
            throw DatabaseError(
                .invalidPath,
                "update contains a path \(path.appending(a)) that is an ancestor of (or equal to) another path \(path.appending(b))"
            )
        }
        return .update(path: path, values: values)
    }

    /// Whether this sets a non-empty value at one data path (not a priority): a `set`, or an
    /// `overwrites` of one entry (a replicated or replayed `set`). No ancestor of the path can
    /// then become empty or a leaf.
    public var setsNonEmptyValue: Bool { nonEmptySet != nil }

    /// The path and value of a write that `setsNonEmptyValue`; nil for any other write.
    public var nonEmptySet: (path: Path, value: PreparedValue)? {
        let path: Path
        let value: PreparedValue
        switch self {
        case .set(let p, let v): (path, value) = (p, v)
        case .overwrites(let entries) where entries.count == 1: (path, value) = entries[0]
        default: return nil
        }
        return value.node.isEmpty || path.last == Key.priority ? nil : (path, value)
    }

    /// The locations this write may change.
    public var paths: [Path] {
        switch self {
        case .set(let path, _), .transaction(let path, _, _, _): return [path.withoutPriority]
        case .update(let base, let values): return values.map { base.appending($0.path).withoutPriority }
        case .overwrites(let entries): return entries.map { $0.path.withoutPriority }
        }
    }
}

/// What a transaction compares the current node with.
public enum TransactionExpectation: Sendable {
    /// Deep equality with this node (numbers numerically). Priorities take part only when
    /// `comparePriorities` (the expected value was sent in export format with `.priority`).
    case value(Node, comparePriorities: Bool)
    /// Equality of the node's hash (docs/PROTOCOL.md, "transaction").
    case hash(String)

    func matches(_ current: Node) -> Bool {
        switch self {
        case .value(let expected, let comparePriorities):
            if comparePriorities { return expected == current }
            return expected.strippingPriorities() == current.strippingPriorities()
        case .hash(let hash): return current.hash == hash
        }
    }
}

extension Path {
    /// The path without a trailing `.priority` segment: the node whose priority it names.
    public var withoutPriority: Path {
        last == Key.priority ? Path(Array(segments.dropLast())) : self
    }
}

extension Node {
    /// This node with every priority removed, at every level.
    public func strippingPriorities() -> Node {
        switch content {
        case .leaf(let value): return .leaf(value)
        case .children(let map):
            guard !map.isEmpty else { return self }
            var stripped = ChildMap()
            for (key, child) in map { stripped.insert(key, child.strippingPriorities()) }
            return .object(stripped)
        }
    }
}
