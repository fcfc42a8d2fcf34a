import Foundation
internal import HearthCore
internal import HearthJSON

/// Conversions between Foundation-style values (`[String: Any]`, `String`, `Int`, `Double`,
/// `Bool`, `nil`), the typed `JSONValue`, and the core's `Node`.
enum ValueConversion {
    /// The JSON of a Foundation-style value. Accepted: `nil` and `NSNull()` (nothing: a
    /// delete), `Bool`, every integer type, `Double`/`Float` (finite), `NSNumber`, `String`,
    /// `[String: Any]`, `[Any]` (stored as an object keyed "0", "1", …), `JSONValue`, and
    /// optionals of those.
    static func json(from value: Any?) throws(HearthError) -> JSONValue {
        guard let value else { return .null }
        switch value {
        case let v as JSONValue: return v
        case is NSNull: return .null
        case let v as NSNumber where type(of: value) is NSNumber.Type:
            // A Foundation number (e.g. a value read back; never a Swift Bool): keep integers exact.
            let type = UInt8(bitPattern: v.objCType.pointee)
            if type == UInt8(ascii: "d") || type == UInt8(ascii: "f") { return try finite(v.doubleValue) }
            return .int(v.int64Value)
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

    /// The Foundation-style value of a node, as Firebase gives it: `nil` when empty; an object
    /// whose keys are all integers 0…n with more than half of them present is an `[Any]`
    /// (`NSNull()` in the gaps), any other object a `[String: Any]`; numbers are `NSNumber`s,
    /// readable `as? Int` (when whole) and `as? Double` alike; `Bool`; `String`.
    static func value(of node: Node) -> Any? {
        switch node.content {
        case .leaf(let leaf): return value(of: leaf)
        case .children(let map):
            if map.isEmpty { return nil }
            if let array = arrayValue(map) { return array }
            var dict: [String: Any] = [:]
            dict.reserveCapacity(map.count)
            for (key, child) in map { dict[key.string] = value(of: child) }
            return dict
        }
    }

    /// The children as an array when they read as one (Firebase's array rule: docs/client.md, "Values").
    private static func arrayValue(_ map: ChildMap) -> [Any]? {
        guard let indexes = arrayIndexes(map) else { return nil }
        var array = [Any](repeating: NSNull(), count: indexes.max + 1)
        for ((_, child), index) in zip(map, indexes.list) { array[index] = value(of: child) ?? NSNull() }
        return array
    }

    /// Each key's integer, in the map's order, and the largest, when every key is a canonical
    /// non-negative integer and more than half of 0…max are present.
    static func arrayIndexes(_ map: ChildMap) -> (list: [Int], max: Int)? {
        var list: [Int] = []
        list.reserveCapacity(map.count)
        var largest = 0
        for (key, _) in map {
            let text = key.string
            guard let index = Int(text), index >= 0, String(index) == text else { return nil }
            list.append(index)
            largest = max(largest, index)
        }
        guard largest < 2 * list.count else { return nil }
        return (list, largest)
    }

    /// The plain JSON of a node with Firebase's array rule applied (for `Decodable` models).
    static func jsonWithArrays(_ node: Node) -> JSONValue {
        switch node.content {
        case .leaf: return node.jsonValue()
        case .children(let map):
            if map.isEmpty { return .null }
            if let indexes = arrayIndexes(map) {
                var elements = [JSONValue](repeating: .null, count: indexes.max + 1)
                for ((_, child), index) in zip(map, indexes.list) { elements[index] = jsonWithArrays(child) }
                return .array(elements)
            }
            return .object(map.map { JSONMember($0.key.string, jsonWithArrays($0.value)) })
        }
    }

    static func value(of leaf: LeafValue) -> Any {
        switch leaf {
        case .bool(let b): return b
        case .string(let s): return s
        case .number(.int(let i)): return NSNumber(value: i)
        case .number(.double(let d)): return NSNumber(value: d)
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
