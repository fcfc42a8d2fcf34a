import NIOCore

/// The leader's recent records as the replication stream sends them (`wal` lines), so that a
/// replica that reconnects resumes from its revision instead of receiving a snapshot
/// (replication.md §3). Bounded by a number of records (`changeLogRevisions`, shared with the
/// clients' resume window); a replica further behind gets a snapshot.
struct RetainedLog {
    /// (revision, is a write, the line without its `confirmedRev`): an onDisconnect record carries
    /// the revision of the write before it.
    private var entries = CircularBuffer<(rev: UInt64, isWrite: Bool, line: [UInt8])>()
    let capacity: Int
    /// The revision of the oldest write dropped (0: none yet).
    private var droppedRev: UInt64 = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    mutating func append(rev: UInt64, isWrite: Bool, line: [UInt8]) {
        entries.append((rev, isWrite, line))
        while entries.count > capacity, let first = entries.popFirst() {
            if first.isWrite { droppedRev = max(droppedRev, first.rev) }
        }
    }

    /// Forgets everything (the log was replaced by a snapshot).
    mutating func reset(at rev: UInt64) {
        entries.removeAll()
        droppedRev = rev
    }

    /// The lines a replica at `rev` still needs, or nil when some were dropped. onDisconnect
    /// records that carry `rev` itself are sent again: applying them twice changes nothing.
    func lines(after rev: UInt64) -> [[UInt8]]? {
        guard rev >= droppedRev else { return nil }
        return entries.filter { $0.isWrite ? $0.rev > rev : $0.rev >= rev }.map(\.line)
    }
}
