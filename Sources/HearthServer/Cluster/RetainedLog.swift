import NIOCore

/// The leader's recent records, so that a replica that reconnects resumes from its revision
/// instead of receiving a snapshot (replication.md §3). Bounded by a number of records
/// (`changeLogRevisions`, shared with the clients' resume window); a replica further behind gets
/// a snapshot. Records are kept as their encoded payloads only (shared with the log and the
/// stream, and with the other records of their batch), not as the writes they encode: those hold
/// the written nodes, which would keep old values alive and, being shared, make later writes
/// below them copy instead of changing the tree in place. They become `wal` lines only when a
/// replica catches up.
struct RetainedLog {
    /// A record's payload with its revision (an onDisconnect record carries the revision of the
    /// write before it) and the epoch it was written in.
    struct Entry {
        let rev: UInt64
        let epoch: UInt64
        let isWrite: Bool
        /// A slice of its batch's buffer (`EncodedRecord.encoding`), which it keeps alive.
        let payload: ArraySlice<UInt8>
    }

    private var entries = CircularBuffer<Entry>()
    let capacity: Int
    /// The revision of the oldest write dropped (0: none yet).
    private var droppedRev: UInt64 = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    mutating func append(_ entry: Entry) {
        entries.append(entry)
        while entries.count > capacity, let first = entries.popFirst() {
            if first.isWrite { droppedRev = max(droppedRev, first.rev) }
        }
    }

    /// Forgets everything (the log was replaced by a snapshot).
    mutating func reset(at rev: UInt64) {
        entries.removeAll()
        droppedRev = rev
    }

    /// The records a replica at `rev` still needs, or nil when some were dropped. onDisconnect
    /// records that carry `rev` itself are sent again: applying them twice changes nothing.
    func entries(after rev: UInt64) -> [Entry]? {
        guard rev >= droppedRev else { return nil }
        return entries.filter { $0.isWrite ? $0.rev > rev : $0.rev >= rev }
    }
}
