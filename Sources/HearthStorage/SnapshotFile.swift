import HearthCore
import HearthJSON

/// The binary layout of a snapshot file `snapshot-<rev>` (docs/STORAGE.md "Snapshots"); all
/// integers little-endian:
///
///     offset  size  field
///     0       4     magic "HSNP"
///     4       4     u32 version 1
///     8       8     u64 rev: the revision the tree is at
///     16      8     u64 JSON bytes (uncompressed)
///     24      8     u64 compressed bytes (the rest of the file)
///     32      4     u32 CRC-32 of the compressed bytes
///     36      4     u32 CRC-32 of bytes 0..<36
///     40      …     zlib stream (RFC 1950) of the root in export-format JSON
enum SnapshotFile {
    static let magic: [UInt8] = Array("HSNP".utf8)
    static let version: UInt32 = 1
    static let headerSize = 40

    /// The file for `root` at `rev`; nil when zlib fails.
    static func encode(root: Node, rev: UInt64, level: Int) -> [UInt8]? {
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
        return file
    }

    /// The tree in a snapshot file that must be at `rev`, or why the file is invalid.
    /// `progress` hears the fraction of the snapshot's JSON parsed so far, about every megabyte.
    static func decode(
        _ file: [UInt8], rev: UInt64, progress: ((Double) -> Void)? = nil
    ) throws(FormatError) -> Node {
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
        guard version == SnapshotFile.version else {
            throw FormatError(offset: 4, reason: "unsupported snapshot version \(version)")
        }
        let headerRev = file.loadUInt64(at: 8)
        guard headerRev == rev else {
            throw FormatError(
                offset: 8, reason: "snapshot header says rev \(headerRev), MANIFEST and its name say \(rev)")
        }
        let jsonCount = file.loadUInt64(at: 16)
        let compressedCount = file.loadUInt64(at: 24)
        guard compressedCount == UInt64(file.count - headerSize) else {
            throw FormatError(
                offset: Int64(min(UInt64(file.count), UInt64(headerSize) &+ compressedCount)),
                reason: "snapshot should hold \(compressedCount) compressed bytes but holds \(file.count - headerSize)")
        }
        guard CRC32.checksum(file, headerSize..<file.count) == file.loadUInt32(at: 32) else {
            throw FormatError(offset: Int64(headerSize), reason: "snapshot data checksum mismatch")
        }
        guard jsonCount < UInt64(Int.max) else {
            throw FormatError(offset: 16, reason: "snapshot size is out of range")
        }
        let inflated = file.withUnsafeBytes { raw in
            Zlib.decompress(UnsafeRawBufferPointer(rebasing: raw[headerSize...]), expectedCount: Int(jsonCount))
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
        do { return try importer.importNode(value) } catch {
            throw FormatError(offset: Int64(headerSize), reason: "snapshot tree is invalid: \(error.message)")
        }
    }
}
