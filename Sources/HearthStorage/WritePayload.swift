import HearthCore
import HearthJSON

/// The payload of one WAL record: a `CommittedWrite`'s overwrites as JSON,
/// `[["/path",<node in export format>],…]`. Paths are `/`-separated and may end in `.priority`
/// (the node is then the priority, or `null` for none). A write that carried a write id starts
/// with its tag, `[{"wid":"app-1:7","kind":"push","at":1795326318420},["/path",…],…]`; a write
/// without one is encoded exactly as before write ids existed. On a database with triggers the
/// leading object also names the server's time of the write, `"t":ms`, and its writer, `"by"`
/// (the identity as onDisconnect records write it; left out for an unauthenticated one), with or
/// without a write id.
enum WritePayload {
    /// Appends the payload of `write` to `buffer`.
    static func encode(_ write: CommittedWrite, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "["))
        if write.tag != nil || write.author != nil {
            encodeLeading(tag: write.tag, author: write.author, into: &buffer)
            if !write.overwrites.isEmpty { buffer.append(UInt8(ascii: ",")) }
        }
        for (index, overwrite) in write.overwrites.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(UInt8(ascii: "["))
            writePath(overwrite.path, into: &buffer)
            buffer.append(UInt8(ascii: ","))
            overwrite.node.writeJSON(into: &buffer, format: .export)
            buffer.append(UInt8(ascii: "]"))
        }
        buffer.append(UInt8(ascii: "]"))
    }

    /// The record's leading object: its write id tag and its author, either or both.
    static func encodeLeading(tag: WriteTag?, author: WriteAuthor?, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        if let tag {
            JSONWriter.writeLiteral(#""wid":"#, into: &buffer)
            JSONWriter.writeString(tag.id.description, into: &buffer)
            JSONWriter.writeLiteral(#","kind":"#, into: &buffer)
            JSONWriter.writeString(tag.kind.rawValue, into: &buffer)
            JSONWriter.writeLiteral(#","at":"#, into: &buffer)
            JSONWriter.writeInt(tag.at, into: &buffer)
            if author != nil { buffer.append(UInt8(ascii: ",")) }
        }
        if let author {
            JSONWriter.writeLiteral(#""t":"#, into: &buffer)
            JSONWriter.writeInt(author.time, into: &buffer)
            if let identity = author.identity {
                JSONWriter.writeLiteral(#","by":"#, into: &buffer)
                RegistrationPayload.encode(identity, into: &buffer)
            }
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// Appends `path` as the JSON string `"/a/b"` (`"/"` for the root) without making its text.
    /// Keys that JSON writes as they are (`JSONWriter.writesAsIs`) are gathered on the stack and
    /// appended at once, rather than each through the JSON writer's escaping path.
    static func writePath(_ path: Path, into buffer: inout [UInt8]) {
        var length = path.isRoot ? 3 : 2
        for key in path.segments { length += 1 + key.string.utf8.count }
        guard length <= Self.gatheredPathBytes else { return writePathEscaping(path, into: &buffer) }
        let gathered = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { scratch -> Bool in
            var at = 0
            scratch[at] = UInt8(ascii: "\"")
            at += 1
            if path.isRoot {
                scratch[at] = UInt8(ascii: "/")
                at += 1
            }
            for key in path.segments {
                scratch[at] = UInt8(ascii: "/")
                at += 1
                var text = key.string
                let count = text.withUTF8 { utf8 -> Int? in
                    guard JSONWriter.writesAsIs(utf8: utf8) else { return nil }
                    UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: scratch[at..<(at + utf8.count)]))
                        .copyMemory(from: UnsafeRawBufferPointer(utf8))
                    return utf8.count
                }
                guard let count else { return false }
                at += count
            }
            scratch[at] = UInt8(ascii: "\"")
            at += 1
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<at]))
            return true
        }
        if !gathered { writePathEscaping(path, into: &buffer) }
    }

    /// The longest path `writePath` gathers on the stack.
    static var gatheredPathBytes: Int { 1024 }

    /// `writePath` through the JSON writer, for keys it must escape.
    static func writePathEscaping(_ path: Path, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        if path.isRoot { buffer.append(UInt8(ascii: "/")) }
        for key in path.segments {
            buffer.append(UInt8(ascii: "/"))
            var text = key.string
            text.withUTF8 { JSONWriter.writeStringContents(utf8: $0, into: &buffer) }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Decodes the payload in `bytes[range]` as the write of revision `rev`. Offsets in errors
    /// are relative to the payload's start. `previousPath` (the last path of the record before)
    /// lets consecutive records share their keys.
    static func decode(
        _ bytes: [UInt8], _ range: Range<Int>, rev: UInt64, previousPath: Path? = nil
    ) throws(FormatError) -> CommittedWrite {
        var workspace = JSONParseWorkspace()
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(FormatError) -> CommittedWrite in
                try decode(
                    UnsafeRawBufferPointer(rebasing: raw[range]), rev: rev, previousPath: previousPath,
                    reusing: &workspace)
            }
        }
        return try result.get()
    }

    /// Decodes a payload's bytes as the write of revision `rev`, without a JSON tree for the
    /// record's array and pairs (each value is parsed, then imported), with the JSON parser's
    /// stacks kept in `workspace` between records.
    static func decode(
        _ bytes: UnsafeRawBufferPointer, rev: UInt64, previousPath: Path? = nil,
        reusing workspace: inout JSONParseWorkspace
    ) throws(FormatError) -> CommittedWrite {
        if let write = try decodeOneOverwrite(bytes, rev: rev, previousPath: previousPath, reusing: &workspace) {
            return write
        }
        return try decodePairs(bytes, rev: rev, previousPath: previousPath, reusing: &workspace)
    }

    /// `decode`'s general way: any payload, through the JSON parser's pairs.
    static func decodePairs(
        _ bytes: UnsafeRawBufferPointer, rev: UInt64, previousPath: Path?, reusing workspace: inout JSONParseWorkspace
    ) throws(FormatError) -> CommittedWrite {
        var overwrites: [(path: Path, node: Node)] = []
        var tag: WriteTag?
        var author: WriteAuthor?
        var failure: FormatError?
        let isArray: Bool
        do throws(JSONError) {
            isArray = try JSONParser.parsePairs(
                of: bytes, limits: RecoveryLimits.json, reusing: &workspace,
                leading: { json in
                    guard failure == nil else { return }
                    do throws(FormatError) { (tag, author) = try decodeLeading(json) } catch { failure = error }
                },
                pair: { pathText, value in
                    guard failure == nil else { return }
                    do throws(FormatError) {
                        overwrites.append(
                            try overwrite(pathText, value, previous: overwrites.last?.path ?? previousPath))
                    } catch { failure = error }
                })
        } catch {
            throw FormatError(offset: Int64(error.offset), reason: "record payload is not valid JSON: \(error.message)")
        }
        if let failure { throw failure }
        guard isArray else { throw FormatError(offset: 0, reason: "record payload is not a JSON array") }
        return CommittedWrite(rev: rev, overwrites: overwrites, tag: tag, author: author)
    }

    /// The most common payload, one overwrite with a plain path, `[["/a/b",<value>]]` exactly as
    /// `encode` writes it, decoded without the pair parser: the path is read in place and only
    /// the value is parsed (a plain scalar, `plainScalar`, not even that). Nil, having decoded
    /// nothing, for any other payload (a tag, several overwrites, whitespace, a path with an
    /// escape or a byte outside printable ASCII, a value that does not parse): `decode` then
    /// reads it the general way, errors included.
    static func decodeOneOverwrite(
        _ bytes: UnsafeRawBufferPointer, rev: UInt64, previousPath: Path?, reusing workspace: inout JSONParseWorkspace
    ) throws(FormatError) -> CommittedWrite? {
        let count = bytes.count
        guard count >= 9, bytes[0] == UInt8(ascii: "["), bytes[1] == UInt8(ascii: "["), bytes[2] == UInt8(ascii: "\""),
            bytes[count - 2] == UInt8(ascii: "]"), bytes[count - 1] == UInt8(ascii: "]")
        else { return nil }
        var quote = 3
        while quote < count - 2 {
            let byte = bytes[quote]
            if byte == UInt8(ascii: "\"") { break }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            quote += 1
        }
        let valueStart = quote + 2
        guard valueStart < count - 2, bytes[quote + 1] == UInt8(ascii: ",") else { return nil }
        let pathText = UnsafeRawBufferPointer(rebasing: bytes[3..<quote])
        let valueText = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<count - 2])
        if let leaf = plainScalar(valueText) {
            let path = try parsePath(pathText, previous: previousPath)
            return CommittedWrite(rev: rev, overwrites: [(path, .leaf(leaf))], tag: nil)
        }
        // The value is a document of its own here: two levels less than inside the array and pair.
        let valueLimits = JSONLimits(maxDepth: RecoveryLimits.depth - 2)
        guard let value = try? JSONParser.parse(valueText, limits: valueLimits, reusing: &workspace) else {
            return nil
        }
        let overwrite = try overwrite(pathText, value, previous: previousPath)
        return CommittedWrite(rev: rev, overwrites: [overwrite], tag: nil)
    }

    /// The most common logged values read without the JSON parser: a string of printable ASCII
    /// without escapes, an integer of at most 18 digits, `true` or `false`. Nil for anything else
    /// (the parser then reads it, and rejects what is not JSON).
    static func plainScalar(_ bytes: UnsafeRawBufferPointer) -> LeafValue? {
        let count = bytes.count
        guard count > 0 else { return nil }
        switch bytes[0] {
        case UInt8(ascii: "\""):
            guard count >= 2, bytes[count - 1] == UInt8(ascii: "\"") else { return nil }
            var index = 1
            while index < count - 1 {
                let byte = bytes[index]
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else {
                    return nil
                }
                index += 1
            }
            return .string(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[1..<count - 1]), as: UTF8.self))
        case UInt8(ascii: "t"):
            return count == 4 && bytes[1] == UInt8(ascii: "r") && bytes[2] == UInt8(ascii: "u")
                && bytes[3] == UInt8(ascii: "e") ? .bool(true) : nil
        case UInt8(ascii: "f"):
            return count == 5 && bytes[1] == UInt8(ascii: "a") && bytes[2] == UInt8(ascii: "l")
                && bytes[3] == UInt8(ascii: "s") && bytes[4] == UInt8(ascii: "e") ? .bool(false) : nil
        default:
            let negative = bytes[0] == UInt8(ascii: "-")
            let digits = negative ? 1 : 0
            // No leading zero (`-0` and `007` go to the parser), at most 18 digits: no overflow.
            guard count > digits, count - digits <= 18, bytes[digits] != UInt8(ascii: "0") || count == 1 else {
                return nil
            }
            var value: Int64 = 0
            for index in digits..<count {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value &* 10 &+ Int64(digit)
            }
            return .number(.int(negative ? -value : value))
        }
    }

    /// Decodes a payload already parsed (a replicated record, parsed with its line).
    static func decode(_ json: JSONValue, rev: UInt64, previousPath: Path? = nil) throws(FormatError) -> CommittedWrite
    {
        guard case .array(let entries) = json else {
            throw FormatError(offset: 0, reason: "record payload is not a JSON array")
        }
        var overwrites: [(path: Path, node: Node)] = []
        overwrites.reserveCapacity(entries.count)
        var tag: WriteTag?
        var author: WriteAuthor?
        var pairs = entries[...]
        if case .object? = entries.first {
            (tag, author) = try decodeLeading(entries[0])
            pairs = entries.dropFirst()
        }
        for entry in pairs {
            guard case .array(let pair) = entry, pair.count == 2, case .string(var pathText) = pair[0] else {
                throw FormatError(offset: 0, reason: "record payload entry is not a [path, value] pair")
            }
            let previous = overwrites.last?.path ?? previousPath
            let result = pathText.withUTF8 { utf8 in
                Result { () throws(FormatError) in
                    try overwrite(UnsafeRawBufferPointer(utf8), pair[1], previous: previous)
                }
            }
            overwrites.append(try result.get())
        }
        return CommittedWrite(rev: rev, overwrites: overwrites, tag: tag, author: author)
    }

    /// One `[path, value]` entry: the path (given as UTF-8) and the value imported.
    private static func overwrite(
        _ pathText: UnsafeRawBufferPointer, _ value: JSONValue, previous: Path?
    ) throws(FormatError) -> (path: Path, node: Node) {
        let path = try parsePath(pathText, previous: previous)
        // A logged scalar was validated when it was written: no importer for it.
        if let leaf = LeafValue(scalar: value) { return (path, .leaf(leaf)) }
        do {
            var importer = NodeImporter(limits: RecoveryLimits.node, baseDepth: path.count)
            return (path, try importer.importNode(value))
        } catch {
            throw FormatError(offset: 0, reason: "record payload has an invalid entry: \(error.message)")
        }
    }

    /// A record's leading object: a write id tag (`wid`, `kind`, `at`), an author (`t`, `by`),
    /// or both.
    static func decodeLeading(_ json: JSONValue) throws(FormatError) -> (WriteTag?, WriteAuthor?) {
        let tag = json["wid"] == nil ? nil : try decodeTag(json)
        guard let time = json["t"] else {
            guard tag != nil else {
                throw FormatError(
                    offset: 0, reason: "record payload has an invalid leading object (\(json.jsonString))")
            }
            return (tag, nil)
        }
        guard case .int(let milliseconds) = time else {
            throw FormatError(offset: 0, reason: "record payload has an invalid author time (\(json.jsonString))")
        }
        let identity: AuthContext?
        do { identity = try RegistrationPayload.decodeAuth(json["by"]) } catch {
            throw FormatError(offset: 0, reason: "record payload has an invalid author (\(json.jsonString))")
        }
        return (tag, WriteAuthor(time: milliseconds, identity: identity))
    }

    /// The tag of a write that carried a write id: `{"wid":"client:n","kind":…,"at":ms}`.
    static func decodeTag(_ json: JSONValue) throws(FormatError) -> WriteTag {
        guard case .string(let text)? = json["wid"], let id = WriteID(text), case .string(let kindText)? = json["kind"],
            let kind = WriteTag.Kind(rawValue: kindText), case .int(let at)? = json["at"]
        else {
            throw FormatError(offset: 0, reason: "record payload has an invalid write id tag (\(json.jsonString))")
        }
        return WriteTag(id: id, kind: kind, at: at)
    }

    /// A logged path: keys were validated when the write was made and the record's checksum
    /// holds, so only the structure is checked here (much faster than `Path.parse`). Segments
    /// equal to those of `previous` (the path decoded before) reuse its keys.
    static func parsePath(_ text: String, previous: Path? = nil) throws(FormatError) -> Path {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(FormatError) in try parsePath(UnsafeRawBufferPointer(utf8), previous: previous) }
        }
        return try result.get()
    }

    /// `parsePath(_:previous:)` of a path's UTF-8.
    static func parsePath(_ bytes: UnsafeRawBufferPointer, previous: Path? = nil) throws(FormatError) -> Path {
        if let previous, isText(bytes, of: previous) { return previous }
        var segments: [Key] = []
        segments.reserveCapacity(8)
        var start = 0
        var index = 0
        while index <= bytes.count {
            if index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                if index > start {
                    let part = UnsafeBufferPointer(rebasing: bytes.assumingMemoryBound(to: UInt8.self)[start..<index])
                    let position = segments.count
                    if let previous, position < previous.count, previous.segments[position].string.utf8Equals(part) {
                        segments.append(previous.segments[position])
                    } else {
                        let string = String(decoding: part, as: UTF8.self)
                        segments.append(string == ".priority" ? Key.priority : Key(string, utf8: part))
                    }
                }
                start = index + 1
            }
            index += 1
        }
        if let index = segments.firstIndex(of: Key.priority), index != segments.count - 1 {
            let text = String(decoding: bytes, as: UTF8.self)
            throw FormatError(offset: 0, reason: "record payload path \"\(text)\" has .priority before its end")
        }
        return Path(segments)
    }
}

extension WritePayload {
    /// Whether `bytes` is `path` as a payload writes it (`/a/b`, `/` for the root): consecutive
    /// records often write the same location, and then share its path whole.
    static func isText(_ bytes: UnsafeRawBufferPointer, of path: Path) -> Bool {
        if path.isRoot { return bytes.count == 1 && bytes[0] == UInt8(ascii: "/") }
        let bytes = bytes.assumingMemoryBound(to: UInt8.self)
        var offset = 0
        for key in path.segments {
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "/") else { return false }
            offset += 1
            let length = key.string.utf8.count
            guard offset + length <= bytes.count,
                key.string.utf8Equals(UnsafeBufferPointer(rebasing: bytes[offset..<offset + length]))
            else { return false }
            offset += length
        }
        return offset == bytes.count
    }
}

/// The limits data is read back with: as permissive as the server's configuration can be, since
/// everything stored was validated when it was written.
enum RecoveryLimits {
    static let depth = 4096
    static let json = JSONLimits(maxDepth: depth)
    static let node = Limits(maxKeyBytes: .max, maxDepth: depth, maxStringBytes: .max)
}
