public import HearthCore

/// The onDisconnect registrations a data directory holds: those registered and neither run nor
/// cancelled, keyed by id, and the id the next registration takes. Built by recovery from the
/// snapshot and the log records after it; kept up to date by `Storage.append`; written into every
/// snapshot.
public struct OnDisconnectLog: Sendable, Equatable {
    /// The live registrations by id.
    public private(set) var live: [UInt64: OnDisconnectRegistration] = [:]
    /// Greater than every id ever logged (ids are never reused, even after a restart).
    public private(set) var nextID: UInt64 = 1

    public init() {}

    init(nextID: UInt64, entries: [OnDisconnectRegistration]) {
        self.nextID = max(nextID, 1)
        for entry in entries { put(entry) }
    }

    /// Applies one logged change: puts replace whole entries by id, removals drop them.
    /// Idempotent, so replaying records a snapshot already holds is harmless.
    mutating func apply(_ change: OnDisconnectChange) {
        for entry in change.put { put(entry) }
        for id in change.removed { live[id] = nil }
    }

    private mutating func put(_ entry: OnDisconnectRegistration) {
        live[entry.id] = entry
        nextID = max(nextID, entry.id &+ 1)
    }

    /// The live registrations in registration (id) order.
    public var entries: [OnDisconnectRegistration] {
        live.values.sorted { $0.id < $1.id }
    }

    /// The live registrations grouped by connection, each queue in registration order, the
    /// queues in the order of their first registration.
    public var queues: [[OnDisconnectRegistration]] {
        var byOwner: [UInt64: [OnDisconnectRegistration]] = [:]
        var owners: [UInt64] = []
        for entry in entries {
            if byOwner[entry.owner] == nil { owners.append(entry.owner) }
            byOwner[entry.owner, default: []].append(entry)
        }
        return owners.map { byOwner[$0] ?? [] }
    }

    public var count: Int { live.count }
    public var isEmpty: Bool { live.isEmpty }
}
