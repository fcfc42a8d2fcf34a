import HearthCore
import HearthJSON

/// The binary layout of a snapshot file `snapshot-<rev>` (docs/STORAGE.md "Snapshots"); all
/// integers little-endian:
///
///     offset  size  field
///     0       4     magic "HSNP"
///     4       4     u32 version 3 (versions 1 and 2, still read, lack the later sections)
///     8       8     u64 rev: the revision the tree is at
///     16      8     u64 JSON bytes (uncompressed)
///     24      8     u64 compressed bytes n (version 1: the rest of the file)
///     32      4     u32 CRC-32 of the compressed bytes
///     36      4     u32 CRC-32 of bytes 0..<36
///     40      n     zlib stream (RFC 1950) of the root in export-format JSON
///
/// Then sections laid out like the header and the tree, each
///
///     0       8     u64 JSON bytes (uncompressed)
///     8       8     u64 compressed bytes m
///     16      4     u32 CRC-32 of the compressed bytes
///     20      4     u32 CRC-32 of bytes 0..<20 of the section
///     24      m     zlib stream of the section's JSON
///
/// Version 2 and later: the onDisconnect registrations live at `rev` (`RegistrationPayload`,
/// `{"next":N,"registrations":[…]}`; in version 2 the last section, so `m` is the rest of the
/// file). Version 3: then the write ids remembered at `rev` (`WriteIDLog`), the last section.
enum SnapshotFile {
    static let magic: [UInt8] = Array("HSNP".utf8)
    static let version: UInt32 = 3
    static let headerSize = 40
    static let sectionHeaderSize = 24

    /// What a snapshot holds.
    struct Contents {
        let root: Node
        /// Empty for a version 1 file.
        let onDisconnect: OnDisconnectLog
        /// Empty for a version 1 or 2 file.
        var writeIDs = WriteIDLog()
    }

    /// The file for `root`, the registrations `onDisconnect` and the write ids `writeIDs` at
    /// `rev`; nil when zlib fails.
    static func encode(
        root: Node, rev: UInt64, onDisconnect: OnDisconnectLog = OnDisconnectLog(),
        writeIDs: WriteIDLog = WriteIDLog(), level: Int
    )
        -> [UInt8]?
    {
        let json = root.jsonBytes(format: .export)
        var file = magic
        file.appendLittleEndian(version)
        file.appendLittleEndian(rev)
        file.appendLittleEndian(UInt64(json.count))
        file.appendLittleEndian(UInt64(0))
        file.appendLittleEndian(UInt32(0))
        file.appendLittleEndian(UInt32(0))
        guard Zlib.compress(json, level: level, appendingTo: &file) else { return nil }
        file.storeLittleEndian(UInt64(file.count - headerSize), at: 24)
        file.storeLittleEndian(CRC32.checksum(file, headerSize..<file.count), at: 32)
        file.storeLittleEndian(CRC32.checksum(file, 0..<36), at: 36)
        guard appendSection(RegistrationPayload.encodeSnapshot(onDisconnect), level: level, to: &file),
            appendSection(writeIDs.encoded(), level: level, to: &file)
        else { return nil }
        return file
    }

    /// Appends one section holding `json`; false when zlib fails.
    private static func appendSection(_ json: [UInt8], level: Int, to file: inout [UInt8]) -> Bool {
        let section = file.count
        file.appendLittleEndian(UInt64(json.count))
        file.appendLittleEndian(UInt64(0))
        file.appendLittleEndian(UInt32(0))
        file.appendLittleEndian(UInt32(0))
        guard Zlib.compress(json, level: level, appendingTo: &file) else { return false }
        let data = section + sectionHeaderSize
        file.storeLittleEndian(UInt64(file.count - data), at: section + 8)
        file.storeLittleEndian(CRC32.checksum(file, data..<file.count), at: section + 16)
        file.storeLittleEndian(CRC32.checksum(file, section..<(section + 20)), at: section + 20)
        return true
    }

    /// The tree and registrations in a snapshot file that must be at `rev`, or why the file is
    /// invalid. `progress` hears the fraction of the snapshot's JSON parsed so far, about every
    /// megabyte.
    static func decode(
        _ file: [UInt8], rev: UInt64, progress: ((Double) -> Void)? = nil
    ) throws(FormatError) -> Contents {
        guard file.count >= headerSize else {
            throw FormatError(offset: 0, reason: "incomplete snapshot header (\(file.count) of \(headerSize) bytes)")
        }
        guard file[0..<4].elementsEqual(magic) else {
            throw FormatError(offset: 0, reason: "not a snapshot (bad magic)")
        }
        guard CRC32.checksum(file, 0..<36) == file.loadUInt32(at: 36) else {
            throw FormatError(offset: 0, reason: "snapshot header checksum mismatch")
        }
        let version = file.loadUInt32(at: 4)
        guard (1...SnapshotFile.version).contains(version) else {
            throw FormatError(offset: 4, reason: "unsupported snapshot version \(version)")
        }
        let headerRev = file.loadUInt64(at: 8)
        guard headerRev == rev else {
            throw FormatError(
                offset: 8, reason: "snapshot header says rev \(headerRev), MANIFEST and its name say \(rev)")
        }
        let jsonCount = file.loadUInt64(at: 16)
        let compressedCount = file.loadUInt64(at: 24)
        let available = UInt64(file.count - headerSize)
        guard version == 1 ? compressedCount == available : compressedCount <= available else {
            throw FormatError(
                offset: Int64(min(UInt64(file.count), UInt64(headerSize) &+ compressedCount)),
                reason: "snapshot should hold \(compressedCount) compressed bytes but holds \(file.count - headerSize)")
        }
        let treeEnd = headerSize + Int(compressedCount)
        guard CRC32.checksum(file, headerSize..<treeEnd) == file.loadUInt32(at: 32) else {
            throw FormatError(offset: Int64(headerSize), reason: "snapshot data checksum mismatch")
        }
        guard jsonCount < UInt64(Int.max) else {
            throw FormatError(offset: 16, reason: "snapshot size is out of range")
        }
        var onDisconnect = OnDisconnectLog()
        var writeIDs = WriteIDLog()
        if version >= 2 {
            let registrations = try section(file, at: treeEnd, isLast: version == 2, name: "onDisconnect")
            do { onDisconnect = try RegistrationPayload.decodeSnapshot(registrations.json) } catch {
                throw FormatError(offset: Int64(treeEnd + sectionHeaderSize), reason: error.reason)
            }
            if version >= 3 {
                let ids = try section(file, at: registrations.end, isLast: true, name: "write id")
                do { writeIDs = try WriteIDLog.decode(ids.json) } catch {
                    throw FormatError(offset: Int64(registrations.end + sectionHeaderSize), reason: error.reason)
                }
            }
        }
        let inflated = file.withUnsafeBytes { raw in
            Zlib.decompress(
                UnsafeRawBufferPointer(rebasing: raw[headerSize..<treeEnd]), expectedCount: Int(jsonCount))
        }
        let json: [UInt8]
        switch inflated {
        case .success(let bytes): json = bytes
        case .failure(let error): throw FormatError(offset: Int64(headerSize), reason: "snapshot data: \(error.reason)")
        }
        let value: JSONValue
        do {
            if let progress {
                let count = Double(max(json.count, 1))
                value = try JSONParser.parse(json, limits: RecoveryLimits.json) { progress(Double($0) / count) }
            } else {
                value = try JSONParser.parse(json, limits: RecoveryLimits.json)
            }
        } catch {
            throw FormatError(
                offset: Int64(headerSize),
                reason: "snapshot JSON is invalid at byte \(error.offset) of the inflated data: \(error.message)")
        }
        var importer = NodeImporter(limits: RecoveryLimits.node, baseDepth: 0)
        do {
            return Contents(root: try importer.importNode(value), onDisconnect: onDisconnect, writeIDs: writeIDs)
        } catch {
            throw FormatError(offset: Int64(headerSize), reason: "snapshot tree is invalid: \(error.message)")
        }
    }

    /// The inflated JSON of the section starting at `start`, and where the section ends; the last
    /// section must end with the file.
    private static func section(
        _ file: [UInt8], at start: Int, isLast: Bool, name: String
    ) throws(FormatError) -> (json: [UInt8], end: Int) {
        guard file.count - start >= sectionHeaderSize else {
            throw FormatError(
                offset: Int64(start),
                reason: "incomplete \(name) section header (\(file.count - start) of \(sectionHeaderSize) bytes)")
        }
        guard CRC32.checksum(file, start..<(start + 20)) == file.loadUInt32(at: start + 20) else {
            throw FormatError(offset: Int64(start), reason: "snapshot \(name) section header checksum mismatch")
        }
        let jsonCount = file.loadUInt64(at: start)
        let compressedCount = file.loadUInt64(at: start + 8)
        let data = start + sectionHeaderSize
        let available = UInt64(file.count - data)
        guard isLast ? compressedCount == available : compressedCount <= available, jsonCount < UInt64(Int.max)
        else {
            throw FormatError(
                offset: Int64(start + 8),
                reason: "snapshot \(name) section should hold \(compressedCount) compressed bytes but holds "
                    + "\(file.count - data)")
        }
        let end = data + Int(compressedCount)
        guard CRC32.checksum(file, data..<end) == file.loadUInt32(at: start + 16) else {
            throw FormatError(offset: Int64(data), reason: "snapshot \(name) section checksum mismatch")
        }
        let inflated = file.withUnsafeBytes { raw in
            Zlib.decompress(UnsafeRawBufferPointer(rebasing: raw[data..<end]), expectedCount: Int(jsonCount))
        }
        switch inflated {
        case .success(let json): return (json, end)
        case .failure(let error):
            throw FormatError(offset: Int64(data), reason: "snapshot \(name) section: \(error.reason)")
        }
    }
}
