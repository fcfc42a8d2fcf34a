/// The key part of a query bound: the sentinels MIN_NAME / MAX_NAME (before / after every key,
/// written `"[MIN_NAME]"` / `"[MAX_NAME]"` on the wire) or a key.
public enum BoundKey: Sendable, Hashable {
    case min
    case max
    case key(Key)

    /// Three-way comparison of a real key with this bound key.
    func compare(_ key: Key) -> Int {
        switch self {
        case .min: return 1
        case .max: return -1
        case .key(let bound): return Key.compare(key, bound)
        }
    }

    /// The wire spelling.
    var wireString: String {
        switch self {
        case .min: return Key.minName
        case .max: return Key.maxName
        case .key(let key): return key.string
        }
    }
}

/// One end of a query range: a (sort value, key) position, inclusive or not (docs/PROTOCOL.md, "Queries").
/// Under key order the position is the key alone: `key` holds it and `value` is `.null`.
public struct QueryBound: Sendable, Hashable {
    public var value: IndexValue
    public var key: BoundKey
    public var inclusive: Bool

    public init(value: IndexValue, key: BoundKey, inclusive: Bool) {
        self.value = value
        self.key = key
        self.inclusive = inclusive
    }
}

/// A query limit: the first or the last `n` children of the range (n ≥ 1).
public enum QueryLimit: Sendable, Hashable {
    case first(Int)
    case last(Int)

    public var count: Int {
        switch self {
        case .first(let n), .last(let n): return n
        }
    }
}

/// A canonical query (docs/PROTOCOL.md, "Queries"): an order, optional start and end bounds and an optional
/// limit. Two requests that mean the same query produce equal specs, so a spec is the key under
/// which views are shared.
public struct QuerySpec: Sendable, Hashable {
    public var order: QueryOrder
    public var start: QueryBound?
    public var end: QueryBound?
    public var limit: QueryLimit?

    public init(
        order: QueryOrder = .priority, start: QueryBound? = nil, end: QueryBound? = nil, limit: QueryLimit? = nil
    ) {
        self.order = order
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// Priority order, no bounds, no limit: a plain listener.
    public static let `default` = QuerySpec()

    /// No bounds and no limit (any order): the view is the whole location, like a plain listener
    /// (a leaf location is the leaf, and the location's priority is kept). Any bound or limit
    /// makes the query filtered: a leaf location then has an empty result and the location's
    /// priority is dropped (docs/PROTOCOL.md, "get").
    public var isUnfiltered: Bool { start == nil && end == nil && limit == nil }
}

extension QuerySpec {
    /// Three-way comparison of a child's (sort value, key) position with a bound.
    @inline(__always)
    func compare(_ value: IndexValue, _ key: Key, with bound: QueryBound) -> Int {
        if case .key = order {
        } else {
            let c = IndexValue.compare(value, bound.value)
            if c != 0 { return c }
        }
        return bound.key.compare(key)
    }

    /// Whether a child at (value, key) satisfies the start bound.
    func isAfterStart(_ value: IndexValue, _ key: Key) -> Bool {
        guard let start else { return true }
        let c = compare(value, key, with: start)
        return c > 0 || (c == 0 && start.inclusive)
    }

    /// Whether a child at (value, key) satisfies the end bound.
    func isBeforeEnd(_ value: IndexValue, _ key: Key) -> Bool {
        guard let end else { return true }
        let c = compare(value, key, with: end)
        return c < 0 || (c == 0 && end.inclusive)
    }

    /// Whether a child at (value, key) lies in the range (bounds only; the limit is not applied).
    public func isInRange(_ value: IndexValue, _ key: Key) -> Bool {
        isAfterStart(value, key) && isBeforeEnd(value, key)
    }
}
