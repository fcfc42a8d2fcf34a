public import HearthCore
import HearthJSON

/// The write ids a data directory remembers (docs/STORAGE.md "Write ids"): what the server needs
/// to rebuild its window of write outcomes after a restart. Recovery reads the snapshot's (the
/// window as it was at the snapshot's revision) and appends the tagged writes of the log after
/// it; a compaction writes the server's window as it is at the snapshot's revision.
///
/// The storage only carries these; which ones are remembered, and for how long, is the server's
/// window's decision, replayed from them.
public struct WriteIDLog: Sendable, Equatable {
    /// One committed write that carried a write id.
    public struct Entry: Sendable, Equatable {
        public var tag: WriteTag
        public var rev: UInt64
        /// For a push, its key.
        public var pushKey: String?

        public init(tag: WriteTag, rev: UInt64, pushKey: String?) {
            self.tag = tag
            self.rev = rev
            self.pushKey = pushKey
        }
    }

    /// In revision order.
    public var entries: [Entry] = []
    /// Per client, the highest sequence number the window forgot to make room for newer ones.
    public var evicted: [String: UInt64] = [:]

    public init(entries: [Entry] = [], evicted: [String: UInt64] = [:]) {
        self.entries = entries
        self.evicted = evicted
    }

    public var isEmpty: Bool { entries.isEmpty && evicted.isEmpty }

    /// Adds a replayed write when it carried a write id.
    mutating func append(_ write: CommittedWrite) {
        guard let tag = write.tag else { return }
        entries.append(Entry(tag: tag, rev: write.rev, pushKey: write.pushKey))
    }

    // MARK: Snapshot section

    /// `{"evicted":[["client",n],…],"ids":[["client:n",rev,"kind",at(,"pushKey")],…]}`
    func encoded() -> [UInt8] {
        var buffer = Array(#"{"evicted":["#.utf8)
        for (index, (client, sequence)) in evicted.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(UInt8(ascii: "["))
            JSONWriter.writeString(client, into: &buffer)
            buffer.append(UInt8(ascii: ","))
            JSONWriter.writeInt(Int64(truncatingIfNeeded: sequence), into: &buffer)
            buffer.append(UInt8(ascii: "]"))
        }
        JSONWriter.writeLiteral(#"],"ids":["#, into: &buffer)
        for (index, entry) in entries.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(UInt8(ascii: "["))
            JSONWriter.writeString(entry.tag.id.description, into: &buffer)
            buffer.append(UInt8(ascii: ","))
            JSONWriter.writeInt(Int64(truncatingIfNeeded: entry.rev), into: &buffer)
            buffer.append(UInt8(ascii: ","))
            JSONWriter.writeString(entry.tag.kind.rawValue, into: &buffer)
            buffer.append(UInt8(ascii: ","))
            JSONWriter.writeInt(entry.tag.at, into: &buffer)
            if let key = entry.pushKey {
                buffer.append(UInt8(ascii: ","))
                JSONWriter.writeString(key, into: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        }
        JSONWriter.writeLiteral("]}", into: &buffer)
        return buffer
    }

    static func decode(_ bytes: [UInt8]) throws(FormatError) -> WriteIDLog {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes, limits: RecoveryLimits.json) } catch {
            throw FormatError(
                offset: Int64(error.offset), reason: "snapshot's write ids are not valid JSON: \(error.message)")
        }
        guard case .array(let evicted)? = json["evicted"], case .array(let ids)? = json["ids"] else {
            throw FormatError(offset: 0, reason: "snapshot's write ids lack \"evicted\" or \"ids\"")
        }
        var log = WriteIDLog()
        for item in evicted {
            guard case .array(let pair) = item, pair.count == 2, case .string(let client) = pair[0],
                WriteID.isValidClient(client), case .int(let sequence) = pair[1], sequence >= 0
            else {
                throw FormatError(offset: 0, reason: "snapshot's write ids have an invalid evicted entry")
            }
            log.evicted[client] = UInt64(sequence)
        }
        log.entries.reserveCapacity(ids.count)
        for item in ids {
            guard case .array(let fields) = item, fields.count == 4 || fields.count == 5,
                case .string(let text) = fields[0], let id = WriteID(text), case .int(let rev) = fields[1], rev > 0,
                case .string(let kindText) = fields[2], let kind = WriteTag.Kind(rawValue: kindText),
                case .int(let at) = fields[3]
            else {
                throw FormatError(offset: 0, reason: "snapshot's write ids have an invalid entry")
            }
            var pushKey: String?
            if fields.count == 5 {
                guard case .string(let key) = fields[4] else {
                    throw FormatError(offset: 0, reason: "snapshot's write ids have an invalid push key")
                }
                pushKey = key
            }
            log.entries.append(Entry(tag: WriteTag(id: id, kind: kind, at: at), rev: UInt64(rev), pushKey: pushKey))
        }
        return log
    }
}
