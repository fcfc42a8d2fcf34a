public import HearthJSON

/// A sort value: what a child is ordered by under a query order (docs/PROTOCOL.md, "Queries": the
/// table of orders).
///
/// The order is null < false < true < numbers (numerically) < strings (UTF-16 code units) <
/// objects, and all objects are equal. Priorities use the same cases (no priority is `.null`,
/// then numbers, then strings), so one comparison serves every index.
///
/// `==` and hashing agree with that order: numbers compare numerically (`1 == 1.0`), strings by
/// their code units (never Swift's canonical equivalence), and every object equals every other.
public enum IndexValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Number)
    case string(String)
    case object

    /// The sort value of a node read as a value (value order, child-path order).
    public init(node: Node) {
        switch node.content {
        case .leaf(let leaf): self.init(leaf)
        case .children(let map): self = map.isEmpty ? .null : .object
        }
    }

    /// The sort value of a leaf.
    public init(_ leaf: LeafValue) {
        switch leaf {
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .number(n)
        case .string(let s): self = .string(s)
        }
    }

    /// The sort value of a priority (`nil`, no priority, is `.null`).
    public init(priority: Priority?) {
        switch priority {
        case nil: self = .null
        case .number(let n)?: self = .number(n)
        case .string(let s)?: self = .string(s)
        }
    }

    /// The rank of the value's kind in the value order.
    @usableFromInline var kindRank: Int {
        switch self {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
        case .string: return 4
        case .object: return 5
        }
    }

    /// Three-way comparison in value order: negative, zero or positive.
    @inlinable
    public static func compare(_ a: IndexValue, _ b: IndexValue) -> Int {
        switch (a, b) {
        case (.number(let x), .number(let y)): return Number.compare(x, y)
        case (.string(let x), .string(let y)): return compareUTF16(x, y)
        default:
            let ra = a.kindRank
            let rb = b.kindRank
            return ra == rb ? 0 : (ra < rb ? -1 : 1)
        }
    }

    public static func == (a: IndexValue, b: IndexValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x.utf8Equals(y)
        default: return compare(a, b) == 0
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kindRank)
        switch self {
        case .number(let n):
            // Numerically equal numbers hash alike: `Double` hashes 0.0 and -0.0 the same, and
            // an Int64 beyond 2^53 merely collides with its rounded neighbours.
            hasher.combine(n.doubleValue)
        case .string(let s):
            for byte in s.utf8 { hasher.combine(byte) }
            hasher.combine(0xFF as UInt8)
        case .null, .bool, .object:
            break
        }
    }
}

extension IndexValue {
    /// The value as JSON, for the canonical wire form of a query (`.object` never occurs in a
    /// valid bound; it renders as `{}`).
    public var jsonValue: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let n): return n.jsonValue
        case .string(let s): return .string(s)
        case .object: return .object([])
        }
    }
}
