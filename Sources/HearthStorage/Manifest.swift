import HearthJSON

/// The `MANIFEST` file: which snapshot recovery starts from. It is only ever replaced
/// atomically (temporary file, fsync, rename, directory fsync). Its content is one line of JSON:
/// `{"format":1,"snapshot":"snapshot-00000000000000000042","rev":42}`, or with `"snapshot":null`
/// and `"rev":0` before the first snapshot.
struct Manifest: Equatable {
    static let format: Int64 = 1

    /// The revision of the snapshot recovery starts from; nil before the first snapshot.
    var snapshotRev: UInt64?

    /// The revision the snapshot holds (0 without a snapshot).
    var baseRev: UInt64 { snapshotRev ?? 0 }

    func encoded() -> [UInt8] {
        var text = "{\"format\":\(Manifest.format),"
        if let snapshotRev {
            text += "\"snapshot\":\"\(DataFiles.snapshotName(snapshotRev))\",\"rev\":\(snapshotRev)}\n"
        } else {
            text += "\"snapshot\":null,\"rev\":0}\n"
        }
        return Array(text.utf8)
    }

    /// Parses a manifest, or throws the reason and byte offset it is invalid.
    static func decode(_ bytes: [UInt8]) throws(FormatError) -> Manifest {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            throw FormatError(offset: Int64(error.offset), reason: "MANIFEST is not valid JSON: \(error.message)")
        }
        guard case .int(let format)? = json["format"] else {
            throw FormatError(offset: 0, reason: "MANIFEST has no \"format\" number")
        }
        guard format == Manifest.format else {
            throw FormatError(
                offset: 0,
                reason: "MANIFEST has format \(format); this version of Hearth reads format \(Manifest.format)")
        }
        guard case .int(let rev)? = json["rev"], rev >= 0 else {
            throw FormatError(offset: 0, reason: "MANIFEST has no valid \"rev\"")
        }
        switch json["snapshot"] {
        case .null?:
            guard rev == 0 else { throw FormatError(offset: 0, reason: "MANIFEST names no snapshot but rev \(rev)") }
            return Manifest(snapshotRev: nil)
        case .string(let name)?:
            guard DataFiles.snapshotRev(name) == UInt64(rev) else {
                throw FormatError(offset: 0, reason: "MANIFEST names snapshot \"\(name)\" with rev \(rev)")
            }
            return Manifest(snapshotRev: UInt64(rev))
        default:
            throw FormatError(offset: 0, reason: "MANIFEST has no valid \"snapshot\"")
        }
    }
}

/// A validation failure inside one file: where and why.
struct FormatError: Error {
    let offset: Int64
    let reason: String
}
