import HearthCore
import HearthJSON

/// The binary layout of a snapshot file `snapshot-<rev>` (docs/STORAGE.md "Snapshots"); all
/// integers little-endian:
///
///     offset  size  field
///     0       4     magic "HSNP"
///     4       4     u32 version 2 (version 1, still read, has no onDisconnect section)
///     8       8     u64 rev: the revision the tree is at
///     16      8     u64 JSON bytes (uncompressed)
///     24      8     u64 compressed bytes n (version 1: the rest of the file)
///     32      4     u32 CRC-32 of the compressed bytes
///     36      4     u32 CRC-32 of bytes 0..<36
///     40      n     zlib stream (RFC 1950) of the root in export-format JSON
///
/// Version 2 then holds the onDisconnect registrations live at `rev` (`RegistrationPayload`),
/// laid out like the header and the tree:
///
///     40+n    8     u64 JSON bytes (uncompressed)
///     48+n    8     u64 compressed bytes m (the rest of the file)
///     56+n    4     u32 CRC-32 of the compressed bytes
///     60+n    4     u32 CRC-32 of bytes 40+n..<60+n
///     64+n    m     zlib stream of `{"next":N,"registrations":[…]}`
enum SnapshotFile {
    static let magic: [UInt8] = Array("HSNP".utf8)
    static let version: UInt32 = 2
    static let headerSize = 40
    static let sectionHeaderSize = 24

    /// What a snapshot holds.
    struct Contents {
        let root: Node
        /// Empty for a version 1 file.
        let onDisconnect: OnDisconnectLog
    }

    /// The file for `root` and the registrations `onDisconnect` at `rev`; nil when zlib fails.
    static func encode(
        root: Node, rev: UInt64, onDisconnect: OnDisconnectLog = OnDisconnectLog(), level: Int
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
        let section = file.count
        let registrations = RegistrationPayload.encodeSnapshot(onDisconnect)
        file.appendLittleEndian(UInt64(registrations.count))
        file.appendLittleEndian(UInt64(0))
        file.appendLittleEndian(UInt32(0))
        file.appendLittleEndian(UInt32(0))
        guard Zlib.compress(registrations, level: level, appendingTo: &file) else { return nil }
        let data = section + sectionHeaderSize
        file.storeLittleEndian(UInt64(file.count - data), at: section + 8)
        file.storeLittleEndian(CRC32.checksum(file, data..<file.count), at: section + 16)
        file.storeLittleEndian(CRC32.checksum(file, section..<(section + 20)), at: section + 20)
        return file
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
        guard version == 1 || version == SnapshotFile.version else {
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
        let onDisconnect = version == 1 ? OnDisconnectLog() : try decodeRegistrations(file, at: treeEnd)
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
        do { return Contents(root: try importer.importNode(value), onDisconnect: onDisconnect) } catch {
            throw FormatError(offset: Int64(headerSize), reason: "snapshot tree is invalid: \(error.message)")
        }
    }

    /// The onDisconnect section of a version 2 file, starting at `start`.
    private static func decodeRegistrations(_ file: [UInt8], at start: Int) throws(FormatError) -> OnDisconnectLog {
        guard file.count - start >= sectionHeaderSize else {
            throw FormatError(
                offset: Int64(start),
                reason: "incomplete onDisconnect section header (\(file.count - start) of \(sectionHeaderSize) bytes)")
        }
        guard CRC32.checksum(file, start..<(start + 20)) == file.loadUInt32(at: start + 20) else {
            throw FormatError(offset: Int64(start), reason: "snapshot onDisconnect section header checksum mismatch")
        }
        let jsonCount = file.loadUInt64(at: start)
        let compressedCount = file.loadUInt64(at: start + 8)
        let data = start + sectionHeaderSize
        guard compressedCount == UInt64(file.count - data), jsonCount < UInt64(Int.max) else {
            throw FormatError(
                offset: Int64(start + 8),
                reason: "snapshot onDisconnect section should hold \(compressedCount) compressed bytes but holds "
                    + "\(file.count - data)")
        }
        guard CRC32.checksum(file, data..<file.count) == file.loadUInt32(at: start + 16) else {
            throw FormatError(offset: Int64(data), reason: "snapshot onDisconnect section checksum mismatch")
        }
        let inflated = file.withUnsafeBytes { raw in
            Zlib.decompress(UnsafeRawBufferPointer(rebasing: raw[data...]), expectedCount: Int(jsonCount))
        }
        switch inflated {
        case .success(let json):
            do { return try RegistrationPayload.decodeSnapshot(json) } catch {
                throw FormatError(offset: Int64(data), reason: error.reason)
            }
        case .failure(let error):
            throw FormatError(offset: Int64(data), reason: "snapshot onDisconnect section: \(error.reason)")
        }
    }
}
