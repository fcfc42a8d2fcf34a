public import HearthJSON

/// A server-value placeholder (docs/PROTOCOL.md, "Values"), resolved when the write is applied.
public enum ServerValue: Sendable, Equatable {
    /// `{".sv":"timestamp"}`: the server's time in ms since the epoch.
    case timestamp
    /// `{".sv":{"increment":n}}`: the current number at the location plus `n`.
    case increment(Number)
}

/// Turns a JSON value into a `Node`, validating it against the limits (docs/PROTOCOL.md, "Values",
/// "Paths and keys", "Limits").
///
/// `.priority` and `.value` members set priorities and leaf values as in an export; arrays become
/// objects keyed `"0"`, `"1"`, …; nulls and empty objects vanish; any other key starting with `.`
/// is rejected. Duplicate keys in one object: the last one wins. Server values are handed to
/// `resolve` with their path relative to the imported value.
public struct NodeImporter {
    public typealias Resolver = (ServerValue, _ relativePath: [Key]) -> LeafValue

    let limits: Limits
    let baseDepth: Int
    let resolve: Resolver
    var path: [Key] = []
    /// Whether any server-value placeholder was met.
    public private(set) var sawServerValue = false

    /// - Parameters:
    ///   - baseDepth: the number of segments of the path the value is written at.
    ///   - resolve: resolves placeholders; when omitted they import as `0` and only
    ///     `sawServerValue` records them (validation without data, off the engine thread).
    public init(limits: Limits, baseDepth: Int, resolve: Resolver? = nil) {
        self.limits = limits
        self.baseDepth = baseDepth
        self.resolve = resolve ?? { _, _ in .number(.int(0)) }
    }

    /// Imports `json` as a node.
    public mutating func importNode(_ json: JSONValue) throws(DatabaseError) -> Node {
        switch json {
        case .null: return .empty
        case .bool, .int, .double, .string:
            if baseDepth + path.count > limits.maxDepth {
                throw DatabaseError(
                    .tooDeep,
                    "a value written at depth \(baseDepth + path.count) exceeds the maximum depth of \(limits.maxDepth)"
                )
            }
            return try .leaf(leaf(json))
        case .array(let elements):
            var entries: [(Key, Node)] = []
            entries.reserveCapacity(elements.count)
            for (i, element) in elements.enumerated() {
                let key = Key(String(i))
                let child = try importChild(key, element)
                if !child.isEmpty { entries.append((key, child)) }
            }
            // "0", "1", … "9", "10": integer keys are already in key order.
            return .object(ChildMap(sortedUniqueEntries: entries))
        case .object(let members):
            return try importObject(members)
        }
    }

    mutating func importChild(_ key: Key, _ json: JSONValue) throws(DatabaseError) -> Node {
        if baseDepth + path.count + 1 > limits.maxDepth, json != .null {
            throw DatabaseError(
                .tooDeep,
                "value is nested deeper than the maximum depth of \(limits.maxDepth) at \(describePath(key))"
            )
        }
        path.append(key)
        defer { path.removeLast() }
        return try importNode(json)
    }

    mutating func importObject(_ members: [JSONMember]) throws(DatabaseError) -> Node {
        var priority: Priority?
        var explicitValue: JSONValue?
        var serverValue: JSONValue?
        var entries: [(Key, Node)] = []
        entries.reserveCapacity(members.count)
        var sorted = true
        for member in members {
            let name = member.key
            if name.utf8.first == UInt8(ascii: ".") {
                switch name {
                case ".priority": priority = try importPriority(member.value)
                case ".value": explicitValue = member.value
                case ".sv": serverValue = member.value
                default:
                    throw DatabaseError(
                        .invalidKey,
                        "key \(quoted(name)) at \(describePath(nil)) is invalid; keys can't start with \".\"")
                }
                continue
            }
            let key: Key
            do { key = try Key.validated(name, limits: limits) } catch {
                throw DatabaseError(error.code, "\(error.message) (at \(describePath(nil)))")
            }
            let child = try importChild(key, member.value)
            if child.isEmpty { continue }
            if let last = entries.last, Key.compare(last.0, key) >= 0 { sorted = false }
            entries.append((key, child))
        }
        if let serverValue {
            guard members.count == 1 else {
                throw DatabaseError(
                    .invalidValue, "a server value {\".sv\": …} at \(describePath(nil)) can't have other members")
            }
            return .leaf(try resolveServerValue(serverValue))
        }
        if let explicitValue, explicitValue != .null {
            guard entries.isEmpty, members.allSatisfy({ $0.key == ".value" || $0.key == ".priority" }) else {
                throw DatabaseError(
                    .invalidValue, "\".value\" can't be combined with children at \(describePath(nil))")
            }
            switch explicitValue {
            case .object(let inner) where inner.count == 1 && inner[0].key == ".sv":
                return .leaf(try resolveServerValue(inner[0].value), priority: priority)
            case .object, .array:
                throw DatabaseError(
                    .invalidValue, "\".value\" at \(describePath(nil)) must be a boolean, number or string")
            default:
                return .leaf(try leaf(explicitValue), priority: priority)
            }
        }
        if !sorted { entries = Self.sortedUnique(entries) }
        return .object(ChildMap(sortedUniqueEntries: entries), priority: priority)
    }

    /// Sorts by key; of equal keys the last one wins.
    static func sortedUnique(_ entries: [(Key, Node)]) -> [(Key, Node)] {
        let order = entries.indices.sorted { a, b in
            let c = Key.compare(entries[a].0, entries[b].0)
            return c != 0 ? c < 0 : a < b
        }
        var result: [(Key, Node)] = []
        result.reserveCapacity(entries.count)
        for i in order {
            if let last = result.last, last.0 == entries[i].0 {
                result[result.count - 1] = entries[i]
            } else {
                result.append(entries[i])
            }
        }
        return result
    }

    func leaf(_ json: JSONValue) throws(DatabaseError) -> LeafValue {
        if case .string(let s) = json, s.utf8.count > limits.maxStringBytes {
            throw DatabaseError(
                .tooLarge,
                "string at \(describePath(nil)) is \(s.utf8.count) bytes; the maximum is \(limits.maxStringBytes)"
            )
        }
        if let leaf = LeafValue(scalar: json) { return leaf }
        if case .double = json {
            throw DatabaseError(.invalidValue, "numbers must be finite at \(describePath(nil))")
        }
        throw DatabaseError(.invalidValue, "expected a boolean, number or string at \(describePath(nil))")
    }

    mutating func importPriority(_ json: JSONValue) throws(DatabaseError) -> Priority? {
        switch json {
        case .null: return nil
        case .int, .double:
            if case .number(let n) = try leaf(json) { return .number(n) }
            return nil
        case .string(let s): return .string(s)
        case .object(let m) where m.count == 1 && m[0].key == ".sv":
            switch try resolveServerValue(m[0].value) {
            case .number(let n): return .number(n)
            case .string(let s): return .string(s)
            case .bool: return nil
            }
        default:
            throw DatabaseError(
                .invalidValue,
                "priority at \(describePath(nil)) must be a string, a number or null")
        }
    }

    mutating func resolveServerValue(_ json: JSONValue) throws(DatabaseError) -> LeafValue {
        sawServerValue = true
        return resolve(try Self.parseServerValue(json), path)
    }

    /// Parses the operand of `.sv`.
    public static func parseServerValue(_ json: JSONValue) throws(DatabaseError) -> ServerValue {
        switch json {
        case .string("timestamp"): return .timestamp
        case .object(let m) where m.count == 1 && m[0].key == "increment":
            switch m[0].value {
            case .int(let i): return .increment(.int(i))
            case .double(let d) where d.isFinite: return .increment(.normalised(d))
            default: break
            }
            throw DatabaseError(.invalidValue, "server value increment needs a finite number")
        default:
            throw DatabaseError(
                .invalidValue,
                "unknown server value; supported are {\".sv\":\"timestamp\"} and {\".sv\":{\"increment\":n}}")
        }
    }

    func describePath(_ extra: Key?) -> String {
        let keys = path + (extra.map { [$0] } ?? [])
        return "value/" + keys.map(\.string).joined(separator: "/")
    }
}

extension ServerValue {
    /// The placeholder's value given the time and the node currently at its location.
    public func resolved(now: Int64, current: Node) -> LeafValue {
        switch self {
        case .timestamp: return .number(.int(now))
        case .increment(let delta):
            if case .number(let n)? = current.leafValue { return .number(n.adding(delta)) }
            return .number(delta)
        }
    }
}

extension LeafValue {
    /// A JSON scalar as a leaf value, without the importer's limits (a value read back from the
    /// log was checked when it was written); nil for anything else, and for a number that is not
    /// finite.
    package init?(scalar json: JSONValue) {
        switch json {
        case .string(let string): self = .string(string)
        case .int(let int): self = .number(.int(int))
        case .bool(let bool): self = .bool(bool)
        case .double(let double) where double.isFinite: self = .number(.normalised(double))
        default: return nil
        }
    }
}
