public import HearthJSON

/// The writes a connection asked to run when it goes away (semantics §5.5), kept as ordered
/// overwrites. A set at P replaces everything queued at or below P; a later write below a queued
/// P lands after it, which edits it; `cancel` at P drops what is queued at or below P and cuts P
/// out of a value queued at an ancestor. All of it runs as one atomic write. Each entry keeps the
/// identity that registered it: the rules check it again, as that identity, when it runs.
public struct OnDisconnectQueue: Sendable {
    /// Queued overwrites: absolute path, the validated JSON (server values unresolved) and the
    /// identity that registered it.
    public private(set) var entries: [(path: Path, value: JSONValue, auth: AuthContext?)] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    /// Queues `value` at `path` (null removes), registered by `auth`.
    public mutating func set(_ path: Path, _ value: JSONValue, auth: AuthContext? = nil) {
        entries.removeAll { path.contains($0.path) }
        entries.append((path, value, auth))
    }

    /// Queues one overwrite per relative path.
    public mutating func update(_ path: Path, _ values: [(path: Path, value: JSONValue)], auth: AuthContext? = nil) {
        for (relative, value) in values { set(path.appending(relative), value, auth: auth) }
    }

    /// Forgets what is queued at or below `path`.
    public mutating func cancel(_ path: Path) {
        entries.removeAll { path.contains($0.path) }
        for i in entries.indices {
            if let relative = entries[i].path.relative(path) {
                entries[i].value = entries[i].value.removing(relative.segments[...])
            }
        }
    }

    /// The queued overwrites in order, prepared, each with the identity that registered it.
    public func runs(limits: Limits) -> [(path: Path, value: PreparedValue, auth: AuthContext?)] {
        entries.compactMap { entry in
            // Validated when queued; a value that no longer validates is skipped.
            (try? PreparedValue(entry.value, at: entry.path, limits: limits)).map { (entry.path, $0, entry.auth) }
        }
    }
}

extension JSONValue {
    /// This value with the member at `path` removed (object members by exact key; array
    /// elements by index, which become null).
    func removing(_ path: ArraySlice<Key>) -> JSONValue {
        guard let first = path.first else { return .null }
        switch self {
        case .object(var members):
            for i in members.indices where members[i].key.utf8Equals(first.string) {
                members[i].value = members[i].value.removing(path.dropFirst())
            }
            return .object(members)
        case .array(var elements):
            if let index = Int(first.string), elements.indices.contains(index) {
                elements[index] = elements[index].removing(path.dropFirst())
            }
            return .array(elements)
        default:
            return self
        }
    }
}
