public import HearthJSON

/// The writes a connection asked to run when it goes away (docs/PROTOCOL.md, "onDisconnect"), kept as ordered
/// overwrites. A set at P replaces everything queued at or below P; a later write below a queued
/// P lands after it, which edits it; `cancel` at P drops what is queued at or below P and cuts P
/// out of a value queued at an ancestor. All of it runs as one atomic write. Each entry keeps the
/// identity that registered it: the rules check it again, as that identity, when it runs.
///
/// Every edit returns the `OnDisconnectChange` the write-ahead log records, so that the queue
/// survives a crash of the server (docs/STORAGE.md "onDisconnect records"). Entries stay in
/// registration order, which is the order of their ids.
public struct OnDisconnectQueue: Sendable {
    /// The connection's durable name: the id of the first entry of this queue (0 while empty and
    /// never used).
    public private(set) var owner: UInt64 = 0
    /// Queued overwrites in order: absolute path, the validated JSON (server values unresolved)
    /// and the identity that registered it.
    public private(set) var entries: [OnDisconnectRegistration] = []
    /// In a cluster, the connection as `<node>/<session>`, stamped on every entry.
    public var connection: String?

    public init(connection: String? = nil) { self.connection = connection }

    /// The queue of a connection of an earlier run, rebuilt from its logged entries (all with
    /// the same owner).
    public init(recovered entries: [OnDisconnectRegistration]) {
        self.entries = entries.sorted { $0.id < $1.id }
        owner = self.entries.first?.owner ?? 0
        connection = self.entries.first?.connection
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// Queues `value` at `path` (null removes), registered by `auth`; the new entry takes the id
    /// `nextID`, which is then advanced.
    @discardableResult
    public mutating func set(
        _ path: Path, _ value: JSONValue, auth: AuthContext? = nil, nextID: inout UInt64
    ) -> OnDisconnectChange {
        var change = OnDisconnectChange()
        add(path, value, auth: auth, nextID: &nextID, into: &change)
        return change
    }

    /// Queues one overwrite per relative path.
    @discardableResult
    public mutating func update(
        _ path: Path, _ values: [(path: Path, value: JSONValue)], auth: AuthContext? = nil, nextID: inout UInt64
    ) -> OnDisconnectChange {
        var change = OnDisconnectChange()
        for (relative, value) in values {
            add(path.appending(relative), value, auth: auth, nextID: &nextID, into: &change)
        }
        return change
    }

    private mutating func add(
        _ path: Path, _ value: JSONValue, auth: AuthContext?, nextID: inout UInt64,
        into change: inout OnDisconnectChange
    ) {
        let replaced = entries.filter { path.contains($0.path) }.map(\.id)
        if !replaced.isEmpty {
            entries.removeAll { path.contains($0.path) }
            // An entry added by the same request and replaced by it again was never logged.
            let added = Set(change.put.map(\.id))
            change.put.removeAll { replaced.contains($0.id) }
            change.removed += replaced.filter { !added.contains($0) }
        }
        if entries.isEmpty { owner = nextID }
        let entry = OnDisconnectRegistration(
            id: nextID, owner: owner, path: path, value: value, auth: auth, connection: connection)
        nextID += 1
        entries.append(entry)
        change.put.append(entry)
    }

    /// Forgets what is queued at or below `path`.
    @discardableResult
    public mutating func cancel(_ path: Path) -> OnDisconnectChange {
        var change = OnDisconnectChange()
        change.removed = entries.filter { path.contains($0.path) }.map(\.id)
        entries.removeAll { path.contains($0.path) }
        for i in entries.indices {
            if let relative = entries[i].path.relative(path) {
                entries[i].value = entries[i].value.removing(relative.segments[...])
                change.put.append(entries[i])
            }
        }
        return change
    }

    /// The queued overwrites in order, prepared, each with the identity that registered it.
    public func runs(limits: Limits) -> [(path: Path, value: PreparedValue, auth: AuthContext?)] {
        entries.compactMap { entry in
            // Validated when queued; a value that no longer validates is skipped.
            (try? PreparedValue(entry.value, at: entry.path, limits: limits)).map { (entry.path, $0, entry.auth) }
        }
    }

    /// The change that drops the whole queue (it ran, or was abandoned).
    public var removal: OnDisconnectChange { OnDisconnectChange(removed: entries.map(\.id)) }
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
