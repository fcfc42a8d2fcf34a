import HearthCore
import HearthJSON

/// The JSON of onDisconnect registrations (docs/STORAGE.md "onDisconnect records").
///
/// A log record's payload is `{"onDisconnect":{"put":[entry,…],"removed":[id,…]}}`; a data
/// record's payload is an array, so the first byte tells them apart. A snapshot keeps the live
/// ones as `{"next":N,"registrations":[entry,…]}`. An entry is
/// `{"id":7,"owner":5,"path":"/presence/alice","value":"offline","auth":A}` with `value` as
/// registered (server values unresolved) and `auth` left out for an unauthenticated connection,
/// `{"admin":true}` for an admin, or `{"uid":…,"provider":…,"token":{claims},"exp":ms}` (`exp`
/// left out when the identity never expires).
enum RegistrationPayload {
    /// Whether the payload in `bytes[range]` is an onDisconnect record (a JSON object).
    static func isRegistration(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        range.lowerBound < range.upperBound && bytes[range.lowerBound] == UInt8(ascii: "{")
    }

    /// Appends the payload of `change` to `buffer`.
    static func encode(_ change: OnDisconnectChange, into buffer: inout [UInt8]) {
        JSONWriter.writeLiteral(#"{"onDisconnect":{"put":["#, into: &buffer)
        for (index, entry) in change.put.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            encode(entry, into: &buffer)
        }
        JSONWriter.writeLiteral(#"],"removed":["#, into: &buffer)
        for (index, id) in change.removed.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            JSONWriter.writeInt(Int64(truncatingIfNeeded: id), into: &buffer)
        }
        JSONWriter.writeLiteral("]}}", into: &buffer)
    }

    /// Decodes the payload in `bytes[range]`. Offsets in errors are relative to the payload.
    static func decode(_ bytes: [UInt8], _ range: Range<Int>) throws(FormatError) -> OnDisconnectChange {
        let json = try parse(bytes[range], what: "onDisconnect record")
        guard let body = json["onDisconnect"], case .array(let put)? = body["put"],
            case .array(let removed)? = body["removed"]
        else {
            throw FormatError(offset: 0, reason: "onDisconnect record lacks \"put\" or \"removed\"")
        }
        var change = OnDisconnectChange()
        change.put = try put.map { entry throws(FormatError) in try decodeEntry(entry) }
        change.removed = try removed.map { id throws(FormatError) in try decodeID(id, "removed id") }
        return change
    }

    /// The live registrations and the next id, as a snapshot keeps them.
    static func encodeSnapshot(_ log: OnDisconnectLog) -> [UInt8] {
        var buffer = Array(#"{"next":"#.utf8)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: log.nextID), into: &buffer)
        JSONWriter.writeLiteral(#","registrations":["#, into: &buffer)
        for (index, entry) in log.entries.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            encode(entry, into: &buffer)
        }
        JSONWriter.writeLiteral("]}", into: &buffer)
        return buffer
    }

    static func decodeSnapshot(_ bytes: [UInt8]) throws(FormatError) -> OnDisconnectLog {
        let json = try parse(bytes[...], what: "snapshot's onDisconnect registrations")
        guard let next = json["next"], case .array(let entries)? = json["registrations"] else {
            throw FormatError(offset: 0, reason: "snapshot's onDisconnect registrations lack \"next\" or their list")
        }
        let decoded = try entries.map { entry throws(FormatError) in try decodeEntry(entry) }
        return OnDisconnectLog(nextID: try decodeID(next, "next id"), entries: decoded)
    }

    // MARK: Entries

    private static func encode(_ entry: OnDisconnectRegistration, into buffer: inout [UInt8]) {
        JSONWriter.writeLiteral(#"{"id":"#, into: &buffer)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: entry.id), into: &buffer)
        JSONWriter.writeLiteral(#","owner":"#, into: &buffer)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: entry.owner), into: &buffer)
        JSONWriter.writeLiteral(#","path":"#, into: &buffer)
        JSONWriter.writeString(entry.path.description, into: &buffer)
        JSONWriter.writeLiteral(#","value":"#, into: &buffer)
        entry.value.serialize(into: &buffer)
        if let auth = entry.auth {
            JSONWriter.writeLiteral(#","auth":"#, into: &buffer)
            encode(auth, into: &buffer)
        }
        if let connection = entry.connection {
            JSONWriter.writeLiteral(#","conn":"#, into: &buffer)
            JSONWriter.writeString(connection, into: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    static func encode(_ auth: AuthContext, into buffer: inout [UInt8]) {
        if auth.isAdmin {
            JSONWriter.writeLiteral(#"{"admin":true}"#, into: &buffer)
            return
        }
        JSONWriter.writeLiteral(#"{"uid":"#, into: &buffer)
        JSONWriter.writeString(auth.uid, into: &buffer)
        JSONWriter.writeLiteral(#","provider":"#, into: &buffer)
        JSONWriter.writeString(auth.provider, into: &buffer)
        JSONWriter.writeLiteral(#","token":"#, into: &buffer)
        auth.claims.serialize(into: &buffer)
        if let expiresAt = auth.expiresAt {
            JSONWriter.writeLiteral(#","exp":"#, into: &buffer)
            JSONWriter.writeInt(expiresAt, into: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    private static func decodeEntry(_ json: JSONValue) throws(FormatError) -> OnDisconnectRegistration {
        guard let id = json["id"], let owner = json["owner"], case .string(let pathText)? = json["path"],
            let value = json["value"]
        else {
            throw FormatError(offset: 0, reason: "onDisconnect entry lacks \"id\", \"owner\", \"path\" or \"value\"")
        }
        return OnDisconnectRegistration(
            id: try decodeID(id, "id"), owner: try decodeID(owner, "owner"),
            path: try WritePayload.parsePath(pathText), value: value, auth: try decodeAuth(json["auth"]),
            connection: json["conn"]?.stringValue)
    }

    static func decodeAuth(_ json: JSONValue?) throws(FormatError) -> AuthContext? {
        guard let json, json != .null else { return nil }
        if json["admin"] == .bool(true) { return .admin }
        guard case .string(let uid)? = json["uid"], case .string(let provider)? = json["provider"],
            let claims = json["token"]
        else {
            throw FormatError(offset: 0, reason: "onDisconnect entry has an invalid \"auth\"")
        }
        var expiresAt: Int64?
        if let exp = json["exp"] {
            guard case .int(let value) = exp else {
                throw FormatError(offset: 0, reason: "onDisconnect entry has an invalid \"auth.exp\"")
            }
            expiresAt = value
        }
        return AuthContext(uid: uid, provider: provider, claims: claims, expiresAt: expiresAt)
    }

    private static func decodeID(_ json: JSONValue, _ what: String) throws(FormatError) -> UInt64 {
        guard case .int(let value) = json, value >= 0 else {
            throw FormatError(offset: 0, reason: "onDisconnect \(what) is not a non-negative integer")
        }
        return UInt64(value)
    }

    private static func parse(_ bytes: ArraySlice<UInt8>, what: String) throws(FormatError) -> JSONValue {
        do { return try JSONParser.parse(bytes, limits: RecoveryLimits.json) } catch {
            throw FormatError(offset: Int64(error.offset), reason: "\(what) is not valid JSON: \(error.message)")
        }
    }
}
