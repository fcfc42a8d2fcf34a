import HearthCore
import HearthJSON

/// What `listDatabases`, `databaseInfo` and the console show of one database.
struct DatabaseInfo: Sendable {
    let name: DatabaseName
    let isDefault: Bool
    /// The revision while the database is open (as of its engine's last turn); nil while closed.
    let rev: UInt64?
    /// The bytes of its files on disk.
    let bytes: Int64
    let connections: Int
    let directory: String
    let maxBytes: Int64?
    let maxConnections: Int?

    var json: JSONValue {
        var members = [
            JSONMember("name", .string(name.text)), JSONMember("default", .bool(isDefault)),
            JSONMember("open", .bool(rev != nil)),
        ]
        if let rev { members.append(JSONMember("rev", .int(Int64(rev)))) }
        members += [
            JSONMember("bytes", .int(bytes)), JSONMember("connections", .int(Int64(connections))),
            JSONMember("directory", .string(directory)),
            JSONMember("maxBytes", maxBytes.map { .int($0) } ?? .null),
            JSONMember("maxConnections", maxConnections.map { .int(Int64($0)) } ?? .null),
        ]
        return .object(members)
    }
}

/// Where a deleted database's data went.
struct DatabaseDeletion: Sendable {
    let name: DatabaseName
    /// The folder in the trash; nil when purged.
    let movedTo: String?

    var json: JSONValue {
        var members = [JSONMember("deleted", .string(name.text))]
        if let movedTo {
            members.append(JSONMember("movedTo", .string(movedTo)))
        } else {
            members.append(JSONMember("purged", .bool(true)))
        }
        return .object(members)
    }
}
