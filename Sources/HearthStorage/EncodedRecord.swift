import HearthCore

/// A log record with its payload already encoded (docs/STORAGE.md, "WAL segments"): a leader
/// encodes each record once for its log and for its replication stream, and a replica logs the
/// bytes its leader sent rather than encoding them again.
///
/// It keeps what the log and the stream need of its record, not the record: copies of it then
/// retain one buffer, where a record's copies retained the written nodes too.
public struct EncodedRecord: Sendable {
    /// The payload, byte for byte what the WAL stores and the `wal` line carries. The records of
    /// one batch share one buffer (`encoding(_:received:)`, or the log's own, which
    /// `Storage.appendEncoding` wrote them into), so that a batch costs one allocation
    /// rather than one per record, also in the leader's retained log, which keeps these slices.
    public let payload: ArraySlice<UInt8>
    /// The record's `writeRev`: its revision when it is a write, nil otherwise.
    public let writeRev: UInt64?
    /// The change of an onDisconnect record (the storage takes it once logged); nil for a write.
    let onDisconnectChange: OnDisconnectChange?

    /// Whether the record is a write (which takes a revision).
    public var isWrite: Bool { writeRev != nil }

    /// Encodes `record`'s payload.
    public init(_ record: LogRecord) {
        var payload: [UInt8] = []
        payload.reserveCapacity(128)
        record.encodePayload(into: &payload)
        self.init(record, payload: payload[...])
    }

    /// A record with the payload it was decoded from (a replicated record): the caller
    /// guarantees that the two agree.
    public init(_ record: LogRecord, payload: ArraySlice<UInt8>) {
        self.payload = payload
        self.writeRev = record.writeRev
        self.onDisconnectChange = record.onDisconnectChange
    }

    /// A write of revision `writeRev` with the payload it was decoded from (a replicated write,
    /// logged before it is applied): the caller guarantees that the two agree.
    public init(writeRev: UInt64, payload: ArraySlice<UInt8>) {
        self.payload = payload
        self.writeRev = writeRev
        self.onDisconnectChange = nil
    }

    /// The records of a batch with their payloads: `received(i)` for the records that came with
    /// one (a replica's, as its leader encoded them), and the others encoded now, one after the
    /// other into a single buffer that their payloads slice.
    public static func encoding(_ records: [LogRecord], received: (Int) -> ArraySlice<UInt8>?) -> [EncodedRecord] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(records.count * 96)
        // Each record's payload as received, or where it ends in `buffer` (whose slices are taken
        // once it is whole: slicing it earlier would make each append copy it).
        var payloads: [(given: ArraySlice<UInt8>?, end: Int)] = []
        payloads.reserveCapacity(records.count)
        for index in records.indices {
            let given = received(index)
            if given == nil { records[index].encodePayload(into: &buffer) }
            payloads.append((given, buffer.count))
        }
        var start = 0
        return records.indices.map { index in
            let (given, end) = payloads[index]
            defer { start = end }
            return EncodedRecord(records[index], payload: given ?? buffer[start..<end])
        }
    }
}
