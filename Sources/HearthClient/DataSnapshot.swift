internal import HearthCore
public import HearthJSON

/// An immutable copy of the data at a location (or of a query's result) at one moment.
public struct DataSnapshot: Sendable, CustomStringConvertible {
    /// The location the data is from.
    public let ref: DatabaseReference
    let node: Node
    /// The order of `children` (the query's, for a query's snapshot).
    let spec: QuerySpec
    /// For `getData`: true when the client answered from its local cache (it was offline),
    /// false when the value came from the server.
    public let isFromCache: Bool

    init(ref: DatabaseReference, node: Node, spec: QuerySpec, fromCache: Bool = false) {
        self.ref = ref
        self.node = node
        self.spec = spec
        self.isFromCache = fromCache
    }

    /// The last key of the location (`""` at the database root).
    public var key: String { ref.key ?? "" }

    /// The data as Foundation-style values: `[String: Any]` for an object (arrays are stored as
    /// objects and come back as dictionaries keyed "0", "1", …), `String`, `Int` for integers
    /// that fit, `Double` for other numbers, `Bool`, or `nil` when nothing is there.
    public var value: Any? { ValueConversion.value(of: node) }

    /// The data as a typed JSON value (`.null` when nothing is there); priorities left out.
    public var json: JSONValue { node.jsonValue() }

    /// The data in export format: priorities as `.priority`, a leaf with a priority as
    /// `{".value": v, ".priority": p}`.
    public var exportJSON: JSONValue { node.jsonValue(format: .export) }

    /// The priority: a `String`, `Int`, `Double`, or `nil`.
    public var priority: Any? { ValueConversion.value(of: node.priority) }

    /// Whether there is any data.
    public func exists() -> Bool { !node.isEmpty }

    /// The children, in the query's order (priority order for a plain location).
    public var children: [DataSnapshot] {
        WindowDiff.ordered(node, spec).map {
            DataSnapshot(ref: ref.child($0.key), node: $0.node, spec: .default)
        }
    }

    public var childrenCount: UInt { UInt(node.childCount) }

    public func hasChildren() -> Bool { node.childCount > 0 }

    /// Whether the descendant at `path` (slashes allowed) has data.
    public func hasChild(_ path: String) -> Bool {
        guard let relative = try? Path.parse(path) else { return false }
        return !node.child(at: relative).isEmpty
    }

    /// The snapshot of a descendant (empty when nothing is there or the path is invalid).
    public func childSnapshot(forPath path: String) -> DataSnapshot {
        let child = ref.child(path)
        guard let relative = try? Path.parse(path) else {
            return DataSnapshot(ref: child, node: .empty, spec: .default)
        }
        return DataSnapshot(ref: child, node: node.child(at: relative), spec: .default)
    }

    public var description: String { "DataSnapshot(\(key): \(json.jsonString))" }
}
