/// The order of a query (docs/PROTOCOL.md, "Queries"): by priority (the default), by key, by the child's value,
/// or by the value at a path inside each child.
public enum QueryOrder: Sendable, Hashable {
    case priority
    case key
    case value
    case child(Path)
}

extension QueryOrder {
    /// The sort value of `child` under this order: for a child path the node at that path inside
    /// the child (`.null` when absent, or when the child or an intermediate node is a leaf); for
    /// value order the child itself; for priority order the child's priority; for key order
    /// `.null` (keys order alone).
    public func indexValue(of child: Node) -> IndexValue {
        switch self {
        case .priority: return IndexValue(priority: child.priority)
        case .key: return .null
        case .value: return IndexValue(node: child)
        case .child(let path): return IndexValue(node: child.child(at: path))
        }
    }

    /// Three-way comparison of (sort value, key) pairs under this order: sort values first, ties
    /// broken by `Key.compare` (docs/PROTOCOL.md, "Paths and keys"). Key order compares the keys only.
    public func compare(_ a: (IndexValue, Key), _ b: (IndexValue, Key)) -> Int {
        if case .key = self { return Key.compare(a.1, b.1) }
        let c = IndexValue.compare(a.0, b.0)
        return c != 0 ? c : Key.compare(a.1, b.1)
    }

    /// Whether a child whose node changed from `old` to `new` (both present) changed its sort
    /// value, i.e. raises `child_moved` (docs/PROTOCOL.md, "Events"): never under key order; any change at all
    /// under value order (priority included); a priority change under priority order; values at
    /// the path that compare unequal (docs/PROTOCOL.md, "Queries") under a child order.
    public func sortValueChanged(from old: Node, to new: Node) -> Bool {
        switch self {
        case .key: return false
        case .value: return old != new
        case .priority: return Priority.compare(old.priority, new.priority) != 0
        case .child(let path):
            return IndexValue.compare(IndexValue(node: old.child(at: path)), IndexValue(node: new.child(at: path))) != 0
        }
    }

    /// The `orderBy` member of the wire query (`"$priority"`, `"$key"`, `"$value"` or the path).
    public var wireName: String {
        switch self {
        case .priority: return "$priority"
        case .key: return "$key"
        case .value: return "$value"
        case .child(let path): return path.segments.map(\.string).joined(separator: "/")
        }
    }
}
