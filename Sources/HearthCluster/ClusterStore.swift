/// The small seam between clustering and its consensus store (docs/cluster.md, "etcd layout"): leases, a
/// create-if-absent transaction, compare-and-delete, reads and a prefix watch. `EtcdClusterStore`
/// is the real one; `InMemoryClusterStore` stands in for it in tests.
///
/// Keys and values are bytes; revisions are the store's own (etcd's `create_revision` and
/// `mod_revision`), strictly increasing across writes.
public protocol ClusterStore: Sendable {
    /// Grants a lease that expires `ttlSeconds` after its last keep-alive.
    func grantLease(ttlSeconds: Int) async throws -> LeaseID

    /// Refreshes `lease` to its full TTL; returns the remaining TTL in seconds, or nil when the
    /// lease no longer exists (it expired or was revoked).
    func keepAlive(_ lease: LeaseID) async throws -> Int?

    /// Revokes `lease`, deleting every key attached to it. Revoking a lease that is already gone
    /// is not an error.
    func revoke(_ lease: LeaseID) async throws

    /// Writes `key` only if it does not exist, attached to `lease` when given.
    func createIfAbsent(key: String, value: [UInt8], lease: LeaseID?) async throws -> CreateOutcome

    /// Writes `key` unconditionally, attached to `lease` when given.
    func put(key: String, value: [UInt8], lease: LeaseID?) async throws

    /// Deletes `key` only if its create revision is `createRevision`; true when it was deleted.
    func compareAndDelete(key: String, createRevision: Int64) async throws -> Bool

    /// The key's current value, or nil when it does not exist.
    func get(key: String) async throws -> KeyValue?

    /// Every key that starts with `prefix`, in key order, with the store's revision at the read.
    func getPrefix(_ prefix: String) async throws -> (revision: Int64, [KeyValue])

    /// The puts and deletes of keys under `prefix` from `fromRevision` on, in revision order. The
    /// stream ends with an error when the watch is lost; the caller reads again and re-watches.
    func watchPrefix(_ prefix: String, fromRevision: Int64) -> AsyncThrowingStream<WatchEvent, any Error>
}

/// A lease's id, as the store assigned it.
public struct LeaseID: Sendable, Hashable, CustomStringConvertible {
    /// The store's id (etcd's int64 lease ID).
    public var rawValue: Int64

    /// The lease with the store's id `rawValue`.
    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// The id in decimal, as etcd prints it.
    public var description: String { String(rawValue) }
}

/// One key as the store holds it.
public struct KeyValue: Sendable, Equatable {
    /// The key (UTF-8 in the store).
    public var key: String
    /// The value's bytes.
    public var value: [UInt8]
    /// The revision of the write that created the key (since it last did not exist).
    public var createRevision: Int64
    /// The revision of the key's last write.
    public var modRevision: Int64
    /// The lease the key is attached to, if any.
    public var lease: LeaseID?

    /// A key as the store holds it.
    public init(key: String, value: [UInt8], createRevision: Int64, modRevision: Int64, lease: LeaseID?) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.lease = lease
    }
}

/// What `createIfAbsent` did.
public enum CreateOutcome: Sendable, Equatable {
    /// The key was written; its create revision.
    case created(createRevision: Int64)
    /// The key already existed; it was left as it is.
    case exists(KeyValue)
}

/// One change seen by a watch.
public enum WatchEvent: Sendable, Equatable {
    /// A key was written; `kv` is its new state.
    case put(KeyValue)
    /// A key was deleted (or its lease expired) at `revision`.
    case delete(key: String, revision: Int64)

    /// The key the event is about.
    public var key: String {
        switch self {
        case .put(let kv): return kv.key
        case .delete(let key, _): return key
        }
    }

    /// The store revision of the change.
    public var revision: Int64 {
        switch self {
        case .put(let kv): return kv.modRevision
        case .delete(_, let revision): return revision
        }
    }
}
