/// A log record with its payload already encoded (docs/STORAGE.md "Record payloads"): a leader
/// encodes each record once for its log and for its replication stream, and a replica logs the
/// bytes its leader sent rather than encoding them again.
public struct EncodedRecord: Sendable {
    public let record: LogRecord
    /// The payload, byte for byte what the WAL stores and the `wal` line carries.
    public let payload: [UInt8]
    /// `record.writeRev`, read once: the loops over a batch's records then never copy a record
    /// out of its enum to look at it.
    public let writeRev: UInt64?

    /// Whether the record is a write (which takes a revision).
    public var isWrite: Bool { writeRev != nil }

    /// Encodes `record`'s payload.
    public init(_ record: LogRecord) {
        var payload: [UInt8] = []
        payload.reserveCapacity(128)
        record.encodePayload(into: &payload)
        self.init(record, payload: payload)
    }

    /// A record with the payload it was decoded from (a replicated record): the caller
    /// guarantees that the two agree.
    public init(_ record: LogRecord, payload: [UInt8]) {
        self.record = record
        self.payload = payload
        self.writeRev = record.writeRev
    }
}
