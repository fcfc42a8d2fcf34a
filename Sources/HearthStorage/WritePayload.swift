import HearthCore
import HearthJSON

/// The payload of one WAL record: a `CommittedWrite`'s overwrites as JSON,
/// `[["/path",<node in export format>],…]`. Paths are `/`-separated and may end in `.priority`
/// (the node is then the priority, or `null` for none).
enum WritePayload {
    /// Appends the payload of `write` to `buffer`.
    static func encode(_ write: CommittedWrite, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "["))
        for (index, overwrite) in write.overwrites.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(UInt8(ascii: "["))
            JSONWriter.writeString(overwrite.path.description, into: &buffer)
            buffer.append(UInt8(ascii: ","))
            overwrite.node.writeJSON(into: &buffer, format: .export)
            buffer.append(UInt8(ascii: "]"))
        }
        buffer.append(UInt8(ascii: "]"))
    }

    /// Decodes the payload in `bytes[range]` as the write of revision `rev`. Offsets in errors
    /// are relative to the payload's start.
    static func decode(_ bytes: [UInt8], _ range: Range<Int>, rev: UInt64) throws(FormatError) -> CommittedWrite {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes[range], limits: RecoveryLimits.json) } catch {
            throw FormatError(offset: Int64(error.offset), reason: "record payload is not valid JSON: \(error.message)")
        }
        guard case .array(let entries) = json else {
            throw FormatError(offset: 0, reason: "record payload is not a JSON array")
        }
        var overwrites: [(path: Path, node: Node)] = []
        overwrites.reserveCapacity(entries.count)
        for entry in entries {
            guard case .array(let pair) = entry, pair.count == 2, case .string(let pathText) = pair[0] else {
                throw FormatError(offset: 0, reason: "record payload entry is not a [path, value] pair")
            }
            let path: Path
            let node: Node
            do {
                path = try Path.parse(pathText, limits: RecoveryLimits.node, allowPriority: true)
                var importer = NodeImporter(limits: RecoveryLimits.node, baseDepth: path.count)
                node = try importer.importNode(pair[1])
            } catch {
                throw FormatError(offset: 0, reason: "record payload has an invalid entry: \(error.message)")
            }
            overwrites.append((path, node))
        }
        return CommittedWrite(rev: rev, overwrites: overwrites)
    }
}

/// The limits data is read back with: as permissive as the server's configuration can be, since
/// everything stored was validated when it was written.
enum RecoveryLimits {
    static let depth = 4096
    static let json = JSONLimits(maxDepth: depth)
    static let node = Limits(maxKeyBytes: .max, maxDepth: depth, maxStringBytes: .max)
}
