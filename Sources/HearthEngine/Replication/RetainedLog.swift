/// The leader's recent records, so that a replica that reconnects resumes from its revision
/// instead of receiving a snapshot (docs/cluster.md, "Replication stream"). Bounded by a number of records
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
        /// A slice of its batch's buffer (the one the log wrote, `Storage.appendEncoding`),
        /// which it keeps alive.
        let payload: ArraySlice<UInt8>
    }

    /// A ring: grows to `capacity`, then each new entry takes the place of the oldest (at
    /// `oldest`). An entry replaced in place costs an assignment, where a queue would append one
    /// and pop another for every record.
    private var ring: [Entry] = []
    private var oldest = 0
    let capacity: Int
    /// The revision of the oldest write dropped (0: none yet).
    private var droppedRev: UInt64 = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    mutating func append(_ entry: Entry) {
        guard ring.count == capacity else {
            ring.append(entry)
            return
        }
        if ring[oldest].isWrite { droppedRev = max(droppedRev, ring[oldest].rev) }
        ring[oldest] = entry
        oldest = oldest == capacity - 1 ? 0 : oldest + 1
    }

    /// Forgets everything (the log was replaced by a snapshot).
    mutating func reset(at rev: UInt64) {
        ring.removeAll()
        oldest = 0
        droppedRev = rev
    }

    /// The records a replica at `rev` still needs, or nil when some were dropped. onDisconnect
    /// records that carry `rev` itself are sent again: applying them twice changes nothing.
    func entries(after rev: UInt64) -> [Entry]? {
        guard rev >= droppedRev else { return nil }
        return (ring[oldest...] + ring[..<oldest]).filter { $0.isWrite ? $0.rev > rev : $0.rev >= rev }
    }
}
