import HearthCore

/// The binary layout of WAL segments (docs/STORAGE.md "WAL segments"); all integers
/// little-endian.
///
/// A segment starts with a 16-byte header — magic `HWAL`, u32 version 1, u64 first revision
/// (equal to the revision in its name) — followed by records:
///
///     offset  size  field
///     0       4     u32 length: payload bytes (> 0) in bits 0–30; bit 31 set when more records
///                   of the same batch follow (group commit: a batch is all or nothing)
///     4       4     u32 crc: CRC-32 of the rev field followed by the payload
///     8       8     u64 rev
///     16      4     u32 header crc: CRC-32 of bytes 0..<16 of the record
///     20      n     payload: a write (`WritePayload`, a JSON array), or a change to the
///                   onDisconnect registrations (`RegistrationPayload`, a JSON object), whose
///                   rev field is that of the last write before it: it takes no revision
enum WALFormat {
    static let magic: [UInt8] = Array("HWAL".utf8)
    static let version: UInt32 = 1
    static let segmentHeaderSize = 16
    static let recordHeaderSize = 20

    /// The header of a segment whose first record will have revision `firstRev`.
    static func segmentHeader(firstRev: UInt64) -> [UInt8] {
        var bytes = magic
        bytes.appendLittleEndian(version)
        bytes.appendLittleEndian(firstRev)
        return bytes
    }

    /// Checks a segment header, or throws why it is invalid (offset 0).
    static func validateSegmentHeader(_ bytes: [UInt8], firstRev: UInt64) throws(FormatError) {
        guard bytes.count >= segmentHeaderSize else {
            throw FormatError(
                offset: 0, reason: "incomplete segment header (\(bytes.count) of \(segmentHeaderSize) bytes)")
        }
        guard bytes[0..<4].elementsEqual(magic) else {
            throw FormatError(offset: 0, reason: "not a WAL segment (bad magic)")
        }
        let version = bytes.loadUInt32(at: 4)
        guard version == WALFormat.version else {
            throw FormatError(offset: 4, reason: "unsupported WAL version \(version)")
        }
        let headerRev = bytes.loadUInt64(at: 8)
        guard headerRev == firstRev else {
            throw FormatError(
                offset: 8, reason: "segment header says first rev \(headerRev), its name says \(firstRev)")
        }
    }

    /// Bit 31 of the length word: more records of the same batch follow.
    static let continuesFlag: UInt32 = 0x8000_0000

    /// Appends the record of `write` to `buffer`; `continues` when more records of the same
    /// batch follow it.
    static func appendRecord(_ write: CommittedWrite, continues: Bool, to buffer: inout [UInt8]) throws(StorageError) {
        try appendRecord(.write(write), rev: write.rev, continues: continues, to: &buffer)
    }

    /// Appends `record` to `buffer` with `rev` in its header: a write's own revision, or for an
    /// onDisconnect record (which takes none) the revision of the last write before it.
    static func appendRecord(
        _ record: LogRecord, rev: UInt64, continues: Bool, to buffer: inout [UInt8]
    ) throws(StorageError) {
        try appendRecord(rev: rev, continues: continues, to: &buffer) { record.encodePayload(into: &$0) }
    }

    /// A record header's room, filled in once its payload is written (appending it from an array
    /// copies it at once; `repeatElement` was appended a byte at a time).
    private static let emptyRecordHeader = [UInt8](repeating: 0, count: recordHeaderSize)

    /// Appends a record whose payload `writePayload` appends (encoding it, or copying bytes
    /// encoded before).
    static func appendRecord(
        rev: UInt64, continues: Bool, to buffer: inout [UInt8], payload writePayload: (inout [UInt8]) -> Void
    ) throws(StorageError) {
        let start = buffer.count
        buffer.append(contentsOf: emptyRecordHeader)
        writePayload(&buffer)
        let length = buffer.count - start - recordHeaderSize
        guard length < Int(continuesFlag) else {
            buffer.removeSubrange(start...)
            throw .invalid("the record after rev \(rev) is \(length) bytes; a WAL record holds less than 2 GiB")
        }
        buffer.storeLittleEndian(UInt32(length) | (continues ? continuesFlag : 0), at: start)
        buffer.storeLittleEndian(rev, at: start + 8)
        let revCRC = CRC32.checksum(buffer, (start + 8)..<(start + 16))
        let crc = CRC32.checksum(buffer, (start + recordHeaderSize)..<buffer.count, continuing: revCRC)
        buffer.storeLittleEndian(crc, at: start + 4)
        buffer.storeLittleEndian(CRC32.checksum(buffer, start..<(start + 16)), at: start + 16)
    }

    /// What is at one offset of a segment.
    enum Parsed {
        /// A valid record: its revision, where its payload is, where the next record starts, and
        /// whether more records of its batch follow.
        case record(rev: UInt64, payload: Range<Int>, end: Int, continues: Bool)
        /// No valid record. `torn` when the bytes look like a write cut short by a crash — an
        /// incomplete record, a bad record whose extent is exactly the rest of the file, zeros
        /// to the end, or a bad record whose payload ends in zero or with a sector's part of
        /// zeros (`hasUnwrittenSector`) — which is acceptable only at the end of the last segment.
        case invalid(reason: String, torn: Bool)
    }

    /// The unit a disk writes whole. A write cut short by a crash leaves each sector it covered
    /// either written or as it was; in a preallocated segment, "as it was" is zeros.
    static let sectorSize = 512

    /// Whether every byte of `bytes` from `offset` on is zero: the part of a preallocated
    /// segment nothing was written to yet.
    static func isZero(_ bytes: [UInt8], from offset: Int) -> Bool {
        bytes[offset...].allSatisfy { $0 == 0 }
    }

    /// Whether the part of some sector that `range` covers is all zeros. A payload is JSON,
    /// which never holds a zero byte, so that part was never written: the sign of a torn write
    /// (as etcd's WAL judges it), where damage in acknowledged data is a flipped bit, not a
    /// sector of zeros.
    static func hasUnwrittenSector(_ bytes: [UInt8], in range: Range<Int>) -> Bool {
        var start = range.lowerBound
        let end = min(range.upperBound, bytes.count)
        while start < end {
            let sectorEnd = min((start / sectorSize + 1) * sectorSize, end)
            if bytes[start..<sectorEnd].allSatisfy({ $0 == 0 }) { return true }
            start = sectorEnd
        }
        return false
    }

    /// Whether a record header that fails its checksum at `offset` lies where a write cut short
    /// left zeros: zeros to the end; its sector's part from `offset` on, or a whole sector
    /// starting inside it (a header may hold a few zero bytes itself, so a sector counts only to
    /// its end or the file's); or its last byte and the payload's first (never zero) both zero,
    /// where a write stopped inside the header.
    private static func headerLooksUnwritten(_ bytes: [UInt8], at offset: Int) -> Bool {
        if isZero(bytes, from: offset) { return true }
        let firstSectorEnd = (offset / sectorSize + 1) * sectorSize
        if hasUnwrittenSector(bytes, in: offset..<firstSectorEnd) { return true }
        if firstSectorEnd < offset + recordHeaderSize,
            hasUnwrittenSector(bytes, in: firstSectorEnd..<(firstSectorEnd + sectorSize))
        {
            return true
        }
        let payloadStart = offset + recordHeaderSize
        return payloadStart < bytes.count && bytes[payloadStart - 1] == 0 && bytes[payloadStart] == 0
    }

    /// Parses the record at `offset` of `bytes` (a whole segment file).
    static func parseRecord(_ bytes: [UInt8], at offset: Int) -> Parsed {
        let remaining = bytes.count - offset
        guard remaining >= recordHeaderSize else {
            return .invalid(
                reason: "incomplete record header (\(remaining) of \(recordHeaderSize) bytes)", torn: true)
        }
        let headerCRC = bytes.loadUInt32(at: offset + 16)
        guard CRC32.checksum(bytes, offset..<(offset + 16)) == headerCRC else {
            return .invalid(reason: "record header checksum mismatch", torn: headerLooksUnwritten(bytes, at: offset))
        }
        let lengthWord = bytes.loadUInt32(at: offset)
        let length = Int(lengthWord & ~continuesFlag)
        let rev = bytes.loadUInt64(at: offset + 8)
        guard length > 0 else { return .invalid(reason: "record with an empty payload", torn: false) }
        let end = offset + recordHeaderSize + length
        guard end <= bytes.count else {
            return .invalid(
                reason: "incomplete record of rev \(rev) (\(remaining - recordHeaderSize) of \(length) payload bytes)",
                torn: true)
        }
        let revCRC = CRC32.checksum(bytes, (offset + 8)..<(offset + 16))
        let crc = CRC32.checksum(bytes, (offset + recordHeaderSize)..<end, continuing: revCRC)
        guard crc == bytes.loadUInt32(at: offset + 4) else {
            // A payload (JSON) never ends in a zero byte: one that does was cut short.
            let torn =
                end == bytes.count || bytes[end - 1] == 0
                || hasUnwrittenSector(bytes, in: (offset + recordHeaderSize)..<end)
            return .invalid(reason: "record of rev \(rev) fails its checksum", torn: torn)
        }
        return .record(
            rev: rev, payload: (offset + recordHeaderSize)..<end, end: end, continues: lengthWord & continuesFlag != 0)
    }
}
