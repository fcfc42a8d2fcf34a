public import HearthJSON

/// One queued onDisconnect overwrite, as the write-ahead log keeps it (docs/STORAGE.md
/// "onDisconnect records"): what to write where, who registered it, and the connection it
/// belongs to.
///
/// `id` is unique for the life of the data directory and grows with every registration, so the
/// ids give the registration order across restarts. `owner` names the connection: the id of the
/// first registration of its current queue (session ids restart at 1 with every run of the
/// server, registration ids do not). Every entry of one queue has the same owner, and a queue runs
/// as one write.
public struct OnDisconnectRegistration: Sendable, Equatable {
    /// Unique and increasing: the registration order.
    public let id: UInt64
    /// The connection the entry belongs to (the id of its queue's first registration).
    public let owner: UInt64
    /// The absolute path the overwrite replaces (it may end in `.priority`).
    public let path: Path
    /// The validated JSON as registered; server values are resolved when it runs.
    public var value: JSONValue
    /// The identity that registered it (nil: unauthenticated); rules are checked as it at run time.
    public let auth: AuthContext?
    /// In a cluster, the connection's node and session (`<node>/<session>`), so that whichever
    /// node leads knows whose queue it is (nil on a standalone server).
    public let connection: String?

    public init(
        id: UInt64, owner: UInt64, path: Path, value: JSONValue, auth: AuthContext?, connection: String? = nil
    ) {
        self.id = id
        self.owner = owner
        self.path = path
        self.value = value
        self.auth = auth
        self.connection = connection
    }
}

/// What one request did to a connection's onDisconnect queue, as the log records it: entries
/// added or whose value changed (complete, keyed by id) and entries dropped. Applying changes in
/// log order to a set of entries keyed by id is idempotent, so replaying a stretch of the log that
/// a snapshot already contains changes nothing.
public struct OnDisconnectChange: Sendable, Equatable {
    /// Entries added, or replaced whole (a `cancel` that cut a part out of a value).
    public var put: [OnDisconnectRegistration]
    /// Ids of entries dropped (replaced by a `set` above them, cancelled, or run).
    public var removed: [UInt64]

    public init(put: [OnDisconnectRegistration] = [], removed: [UInt64] = []) {
        self.put = put
        self.removed = removed
    }

    /// Whether the request changed nothing (nothing to log).
    public var isEmpty: Bool { put.isEmpty && removed.isEmpty }
}

extension AuthContext: Equatable {
    public static func == (a: AuthContext, b: AuthContext) -> Bool {
        a.kind == b.kind && a.uid == b.uid && a.provider == b.provider && a.claims == b.claims
            && a.expiresAt == b.expiresAt
    }
}
