import Synchronization

/// A `ClusterStore` in memory, with etcd's semantics where clustering relies on them: leases that
/// expire `ttl` seconds after their last keep-alive on the monotonic clock (deleting their keys,
/// which watches see), strictly increasing revisions, create revisions, and watches that replay
/// from a revision. For tests of the election without etcd; `isReachable` simulates an outage.
public final class InMemoryClusterStore: ClusterStore {
    private struct Lease {
        var ttl: Int
        var deadline: ContinuousClock.Instant
    }

    private struct Watcher {
        var prefix: String
        var continuation: AsyncThrowingStream<WatchEvent, any Error>.Continuation
    }

    private struct State {
        var revision: Int64 = 1
        var nextLease: Int64 = 7_000
        var keys: [String: KeyValue] = [:]
        var leases: [Int64: Lease] = [:]
        var history: [WatchEvent] = []
        var watchers: [Int: Watcher] = [:]
        var nextWatcher = 0
        var reachable = true
    }

    private let state = Mutex(State())
    private let clock = ContinuousClock()
    private let sweeper = Mutex<Task<Void, Never>?>(nil)

    /// An empty store at revision 1; its leases start expiring at once.
    public init() {
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                guard let self else { return }
                self.state.withLock { self.expire(&$0) }
            }
        }
        sweeper.withLock { $0 = task }
    }

    deinit {
        sweeper.withLock { $0?.cancel() }
    }

    /// While false, every call fails with `ClusterStoreError.unreachable` and open watches end
    /// (leases go on counting down, as etcd's would).
    public var isReachable: Bool {
        get { state.withLock { $0.reachable } }
        set {
            let cut = state.withLock { state -> [Watcher] in
                state.reachable = newValue
                guard !newValue else { return [] }
                defer { state.watchers = [:] }
                return Array(state.watchers.values)
            }
            // Outside the lock: finishing runs the stream's termination handler, which takes it.
            for watcher in cut { watcher.continuation.finish(throwing: Self.unreachable) }
        }
    }

    public func grantLease(ttlSeconds: Int) async throws -> LeaseID {
        try access { state in
            state.nextLease += 1
            state.leases[state.nextLease] = Lease(ttl: ttlSeconds, deadline: clock.now + .seconds(ttlSeconds))
            return LeaseID(state.nextLease)
        }
    }

    public func keepAlive(_ lease: LeaseID) async throws -> Int? {
        try access { state in
            guard var entry = state.leases[lease.rawValue] else { return nil }
            entry.deadline = clock.now + .seconds(entry.ttl)
            state.leases[lease.rawValue] = entry
            return entry.ttl
        }
    }

    public func revoke(_ lease: LeaseID) async throws {
        try access { state in
            guard state.leases.removeValue(forKey: lease.rawValue) != nil else { return }
            deleteKeys(of: [lease.rawValue], &state)
        }
    }

    public func createIfAbsent(key: String, value: [UInt8], lease: LeaseID?) async throws -> CreateOutcome {
        try access { state in
            if let existing = state.keys[key] { return .exists(existing) }
            try write(key, value, lease, &state)
            return .created(createRevision: state.revision)
        }
    }

    public func put(key: String, value: [UInt8], lease: LeaseID?) async throws {
        try access { state in try write(key, value, lease, &state) }
    }

    public func compareAndDelete(key: String, createRevision: Int64) async throws -> Bool {
        try access { state in
            guard let existing = state.keys[key], existing.createRevision == createRevision else { return false }
            state.revision += 1
            state.keys[key] = nil
            publish(.delete(key: key, revision: state.revision), &state)
            return true
        }
    }

    public func get(key: String) async throws -> KeyValue? {
        try access { $0.keys[key] }
    }

    public func getPrefix(_ prefix: String) async throws -> (revision: Int64, [KeyValue]) {
        try access { state in
            let matching = state.keys.values.filter { $0.key.utf8.starts(with: prefix.utf8) }
            return (state.revision, matching.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
        }
    }

    public func watchPrefix(_ prefix: String, fromRevision: Int64) -> AsyncThrowingStream<WatchEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<WatchEvent, any Error>.makeStream()
        let id = state.withLock { state -> Int? in
            expire(&state)
            guard state.reachable else {
                continuation.finish(throwing: Self.unreachable)
                return nil
            }
            for event in state.history where event.revision >= fromRevision && event.key.utf8.starts(with: prefix.utf8)
            {
                continuation.yield(event)
            }
            state.nextWatcher += 1
            state.watchers[state.nextWatcher] = Watcher(prefix: prefix, continuation: continuation)
            return state.nextWatcher
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.watchers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    private static let unreachable = ClusterStoreError.unreachable(endpoints: ["memory"], reason: "simulated outage")

    private func access<T>(_ body: (inout State) throws -> T) throws -> T {
        try state.withLock { state in
            expire(&state)
            guard state.reachable else { throw Self.unreachable }
            return try body(&state)
        }
    }

    private func write(_ key: String, _ value: [UInt8], _ lease: LeaseID?, _ state: inout State) throws {
        if let lease, state.leases[lease.rawValue] == nil { throw ClusterStoreError.leaseNotFound(lease) }
        state.revision += 1
        let created = state.keys[key]?.createRevision ?? state.revision
        let kv = KeyValue(key: key, value: value, createRevision: created, modRevision: state.revision, lease: lease)
        state.keys[key] = kv
        publish(.put(kv), &state)
    }

    private func expire(_ state: inout State) {
        let now = clock.now
        let expired = state.leases.filter { $0.value.deadline <= now }.map(\.key)
        guard !expired.isEmpty else { return }
        for id in expired { state.leases[id] = nil }
        deleteKeys(of: expired, &state)
    }

    private func deleteKeys(of leases: [Int64], _ state: inout State) {
        let doomed = state.keys.values.filter { kv in kv.lease.map { leases.contains($0.rawValue) } ?? false }
        for kv in doomed.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            state.revision += 1
            state.keys[kv.key] = nil
            publish(.delete(key: kv.key, revision: state.revision), &state)
        }
    }

    private func publish(_ event: WatchEvent, _ state: inout State) {
        state.history.append(event)
        for watcher in state.watchers.values where event.key.utf8.starts(with: watcher.prefix.utf8) {
            watcher.continuation.yield(event)
        }
    }
}
