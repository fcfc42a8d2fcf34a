/// A JSON document as parsed from or written to the wire.
///
/// Integers that are written without fraction or exponent and fit in `Int64` are kept exactly as
/// `.int`; every other number is a `.double`. `-0` is normalised to `.int(0)`/`.double(0)` by the
/// parser. Objects keep their members in document order (duplicates are kept as they appear; the
/// layers above decide what a duplicate means).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])
}

/// One member of a JSON object, in document order.
public struct JSONMember: Sendable, Equatable {
    public var key: String
    public var value: JSONValue

    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

extension [JSONMember] {
    /// The value of the last member named `key` (JavaScript's `JSON.parse` keeps the last of
    /// repeated keys), compared by UTF-8 bytes.
    public func lastValue(named key: String) -> JSONValue? {
        withUnsafeBufferPointer { members in
            var i = members.count
            while i > 0 {
                i -= 1
                if members[i].key.utf8Equals(key) { return members[i].value }
            }
            return nil
        }
    }
}

extension JSONValue {
    /// Builds an object from members in the given order.
    public static func object(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(pairs.map { JSONMember($0.key, $0.value) })
    }

    /// The value of the member named `key` (the last one, when a key repeats, as in
    /// JavaScript's `JSON.parse`), when this is an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.lastValue(named: key)
    }

    /// The members, when this is an object.
    public var objectMembers: [JSONMember]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The boolean, when this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The number as a `Double`, when this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The number as an exact `Int64`, when this is an integral number that fits.
    public var int64Value: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d):
            guard d.rounded() == d, d >= -9.223372036854775808e18, d < 9.223372036854775808e18
            else { return nil }
            return Int64(d)
        default: return nil
        }
    }

    /// True for `.int` and `.double`.
    public var isNumber: Bool {
        switch self {
        case .int, .double: return true
        default: return false
        }
    }
}
