/// Evaluates queries over one location (docs/PROTOCOL.md, "Queries"): the children within the bounds, in
/// query order, then the first or last `n` of them when limited (range before limit).
public enum QueryEvaluator {
    /// One windowed child with its sort value.
    typealias Entry = WindowEntry

    /// The children of `location` selected by `spec`, in query order. A leaf location has no
    /// children, so every query over it selects nothing here (an unfiltered query's result is the
    /// leaf itself; see `View.writeValue`).
    ///
    /// With `index` (whose order must be `spec.order`) a limited query costs O(log n + k) and an
    /// unlimited one O(log n + result). Without one, key order seeks the location's own children
    /// map just as cheaply; other orders sort every child (the reference implementation).
    public static func window(_ spec: QuerySpec, of location: Node, index: ChildIndex?) -> [(key: Key, node: Node)] {
        entries(spec, of: location, index: index).map { (key: $0.key, node: $0.node) }
    }

    /// `window` with the sort values.
    static func entries(_ spec: QuerySpec, of location: Node, index: ChildIndex?) -> [Entry] {
        if let index, index.order == spec.order { return seek(spec, in: index) }
        if case .key = spec.order { return seek(spec, in: ChildIndex(order: .key, location: location)) }
        return reference(spec, of: location)
    }

    /// The window read off an index: seek to the bound on the limit's side and walk. O(log n + k).
    static func seek(_ spec: QuerySpec, in index: ChildIndex) -> [Entry] {
        var result: [Entry] = []
        if case .last(let n)? = spec.limit {
            var cursor = index.makeCursor(from: spec.end, reversed: true)
            while result.count < n, let entry = cursor.next() {
                guard spec.isAfterStart(entry.value, entry.key) else { break }
                result.append(entry)
            }
            result.reverse()
            return result
        }
        let n = spec.limit?.count ?? Int.max
        var cursor = index.makeCursor(from: spec.start, reversed: false)
        while result.count < n, let entry = cursor.next() {
            guard spec.isBeforeEnd(entry.value, entry.key) else { break }
            result.append(entry)
        }
        return result
    }

    /// The window computed naively: sort every child, keep those in range, then apply the
    /// limit. O(n log n).
    static func reference(_ spec: QuerySpec, of location: Node) -> [Entry] {
        var all: [Entry] = location.children.map {
            WindowEntry(value: spec.order.indexValue(of: $0.value), key: $0.key, node: $0.value)
        }
        if case .key = spec.order {
        } else {
            all.sort { spec.order.compare(($0.value, $0.key), ($1.value, $1.key)) < 0 }
        }
        let inRange = all.filter { spec.isInRange($0.value, $0.key) }
        switch spec.limit {
        case .first(let n)?: return Array(inRange.prefix(n))
        case .last(let n)?: return Array(inRange.suffix(n))
        case nil: return inRange
        }
    }
}
