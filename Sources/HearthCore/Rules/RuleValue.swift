import HearthJSON

/// A value during rule evaluation (docs/rules.md, "Values and types"). Regex and array literals never become values:
/// they exist only as the compiled arguments of `matches` and `hasChildren`.
enum RuleValue: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case snapshot(Snapshot)
    /// The `auth` map of a signed-in connection (`uid`, `provider`, `token`).
    case auth
    /// An object or array inside the token's claims.
    case claim(JSONValue)
    /// The `query` object.
    case query
    /// The opaque value of `val()` on a node with children (docs/rules.md, "Methods").
    case object

    /// A JSON scalar as a value; objects and arrays become claims.
    init(scalar json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .string(let s): self = .string(s)
        case .array, .object: self = .claim(json)
        }
    }

    /// The value of a leaf.
    init(leaf: LeafValue) {
        switch leaf {
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .number(n.doubleValue)
        case .string(let s): self = .string(s)
        }
    }
}

/// A static type (docs/rules.md, "Values and types"): the set of kinds a value may have at run
/// time. A singleton is a known type; `val()`, `getPriority()` and `auth` members are sets of
/// several kinds.
struct ValueType: OptionSet, Sendable {
    let rawValue: UInt16

    static let null = ValueType(rawValue: 1 << 0)
    static let bool = ValueType(rawValue: 1 << 1)
    static let number = ValueType(rawValue: 1 << 2)
    static let string = ValueType(rawValue: 1 << 3)
    static let snapshot = ValueType(rawValue: 1 << 4)
    static let map = ValueType(rawValue: 1 << 5)
    static let query = ValueType(rawValue: 1 << 6)
    static let object = ValueType(rawValue: 1 << 7)
    /// Compile-time only: array and regex literals.
    static let array = ValueType(rawValue: 1 << 8)
    static let regex = ValueType(rawValue: 1 << 9)

    /// `val()`: a leaf value, null, or the opaque object value.
    static let dataValue: ValueType = [.null, .bool, .number, .string, .object]
    /// A member of `auth` or of its claims: any JSON value.
    static let authValue: ValueType = [.null, .bool, .number, .string, .map]
    /// `getPriority()`.
    static let priority: ValueType = [.null, .number, .string]

    /// Whether exactly one kind is possible.
    var isKnown: Bool { rawValue != 0 && rawValue & (rawValue - 1) == 0 }

    /// The type for messages, with its article: `a string`, `null`, `a value that may be null,
    /// a boolean, a number or a string`.
    var described: String {
        let names: [(ValueType, String)] = [
            (.null, "null"), (.bool, "a boolean"), (.number, "a number"), (.string, "a string"),
            (.snapshot, "a snapshot"), (.map, "a map"), (.query, "the query object"), (.object, "an object"),
            (.array, "an array"), (.regex, "a regular expression"),
        ]
        let parts = names.filter { contains($0.0) }.map(\.1)
        guard let last = parts.last else { return "nothing" }
        if parts.count == 1 { return last }
        return "a value that may be " + parts.dropLast().joined(separator: ", ") + " or " + last
    }
}
