import HearthCore

/// Records a leader sent one after the other, handed to a replica's engine together: each
/// record's fields, its decoded write, and one buffer holding every payload.
///
/// Kept as arrays rather than a message per record: the engine reads the records twice (to log
/// them ahead, then to apply them), and copying a message out of an array for each read would
/// retain and release every part of it.
package struct LinkRecords: Sendable {
    /// A record's fields (plain values: reading one retains nothing).
    package struct Record: Sendable {
        package let rev: UInt64
        package let epoch: UInt64
        /// A write (`w`), not an onDisconnect change (`od`).
        package let isWrite: Bool
        /// A write whose payload decoded (its `CommittedWrite` is in `writes`).
        package let isValidWrite: Bool
        package let confirmedRev: UInt64
        /// Where its payload's bytes are in `payloads`.
        package let payload: Range<Int>
    }

    package private(set) var records: [Record] = []
    /// Beside `records`: the decoded write, nil for an onDisconnect change or a payload that is
    /// not a valid write.
    package private(set) var writes: [CommittedWrite?] = []
    /// The payloads' bytes as the leader logged them, one after the other.
    package private(set) var payloads: [UInt8] = []

    package init() {}

    /// Room for `records` records and `bytes` bytes of payloads, so that a run grows without
    /// reallocating.
    package init(reserving records: Int, bytes: Int) {
        self.records.reserveCapacity(records)
        writes.reserveCapacity(records)
        payloads.reserveCapacity(bytes)
    }

    package var isEmpty: Bool { records.isEmpty }
    package var count: Int { records.count }

    /// Record `index`'s payload (a slice of the shared buffer, which the replica's log and
    /// retained log keep).
    func payload(at index: Int) -> ArraySlice<UInt8> { payloads[records[index].payload] }

    /// Adds a record, copying its payload's bytes.
    package mutating func append(
        rev: UInt64, epoch: UInt64, write: consuming CommittedWrite?, payload bytes: UnsafeRawBufferPointer,
        isWrite: Bool, confirmedRev: UInt64
    ) {
        let start = payloads.count
        // (As typed bytes: appending raw bytes would copy them one by one.)
        bytes.withMemoryRebound(to: UInt8.self) { payloads.append(contentsOf: $0) }
        records.append(
            Record(
                rev: rev, epoch: epoch, isWrite: isWrite, isValidWrite: write != nil, confirmedRev: confirmedRev,
                payload: start..<payloads.count))
        writes.append(write)
    }
}
