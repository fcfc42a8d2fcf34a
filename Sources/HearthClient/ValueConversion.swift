internal import HearthCore
internal import HearthJSON

/// Conversions between Foundation-style values (`[String: Any]`, `String`, `Int`, `Double`,
/// `Bool`, `nil`), the typed `JSONValue`, and the core's `Node`.
enum ValueConversion {
    /// The JSON of a Foundation-style value. Accepted: `nil`, `Bool`, every integer type,
    /// `Double`/`Float` (finite), `String`, `[String: Any]`, `[Any]`, `JSONValue`, and optionals
    /// of those.
    static func json(from value: Any?) throws(HearthError) -> JSONValue {
        guard let value else { return .null }
        switch value {
        case let v as JSONValue: return v
        case let v as Bool: return .bool(v)
        case let v as Int: return .int(Int64(v))
        case let v as Int64: return .int(v)
        case let v as Int32: return .int(Int64(v))
        case let v as Int16: return .int(Int64(v))
        case let v as Int8: return .int(Int64(v))
        case let v as UInt8: return .int(Int64(v))
        case let v as UInt16: return .int(Int64(v))
        case let v as UInt32: return .int(Int64(v))
        case let v as UInt:
            guard let i = Int64(exactly: v) else { return .double(Double(v)) }
            return .int(i)
        case let v as UInt64:
            guard let i = Int64(exactly: v) else { return .double(Double(v)) }
            return .int(i)
        case let v as Double: return try finite(v)
        case let v as Float: return try finite(Double(v))
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as [String: Any]:
            var members: [JSONMember] = []
            members.reserveCapacity(v.count)
            for (key, child) in v { members.append(JSONMember(key, try json(from: child))) }
            return .object(members)
        case let v as [Any]:
            var elements: [JSONValue] = []
            elements.reserveCapacity(v.count)
            for child in v { elements.append(try json(from: child)) }
            return .array(elements)
        default:
            // An optional boxed in `Any` (a dictionary of `Any?`): unwrap it.
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional {
                return try json(from: mirror.children.first?.value)
            }
            throw HearthError(
                .invalidValue,
                "a value of type \(type(of: value)) can't be stored; use nil, Bool, numbers, String, [String: Any] or [Any]"
            )
        }
    }

    private static func finite(_ d: Double) throws(HearthError) -> JSONValue {
        guard d.isFinite else { throw HearthError(.invalidValue, "numbers must be finite, not \(d)") }
        return .double(d)
    }

    /// Validates `json` as a value written at `path` and returns it as a node (server values
    /// are validated and imported as 0; the server resolves them).
    static func node(from json: JSONValue, at path: Path) throws(HearthError) -> Node {
        var importer = NodeImporter(limits: .default, baseDepth: path.count)
        do {
            return try importer.importNode(json)
        } catch {
            throw HearthError(error)
        }
    }

    /// Validates a priority: a string, a finite number, a server value, or `nil`.
    static func priorityJSON(_ priority: Any?) throws(HearthError) -> JSONValue {
        let json = try json(from: priority)
        switch json {
        case .null, .string, .int, .double: return json
        case .object where json[".sv"] != nil: return json
        default:
            throw HearthError(.invalidValue, "a priority must be a string, a number or nil")
        }
    }

    /// The Foundation-style value of a node: `nil` when empty, `[String: Any]` for an object
    /// (never an array), `Bool`, `Int` (integers that fit), `Double`, `String` for leaves.
    static func value(of node: Node) -> Any? {
        switch node.content {
        case .leaf(let leaf): return value(of: leaf)
        case .children(let map):
            if map.isEmpty { return nil }
            var dict: [String: Any] = [:]
            dict.reserveCapacity(map.count)
            for (key, child) in map { dict[key.string] = value(of: child) }
            return dict
        }
    }

    static func value(of leaf: LeafValue) -> Any {
        switch leaf {
        case .bool(let b): return b
        case .string(let s): return s
        case .number(.int(let i)): return Int(exactly: i) ?? Double(i)
        case .number(.double(let d)): return d
        }
    }

    static func value(of priority: Priority?) -> Any? {
        switch priority {
        case nil: return nil
        case .string(let s)?: return s
        case .number(let n)?: return value(of: .number(n))
        }
    }

    /// Parses a node sent by the server (export format, so priorities are kept).
    static func node(fromServer json: JSONValue) -> Node {
        var importer = NodeImporter(
            limits: Limits(maxKeyBytes: .max, maxDepth: .max, maxStringBytes: .max), baseDepth: 0)
        return (try? importer.importNode(json)) ?? .empty
    }
}
