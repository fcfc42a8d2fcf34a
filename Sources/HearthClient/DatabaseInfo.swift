public import HearthJSON

/// One of a server's databases as `Database.listDatabases()`, `createDatabase(_:)` and
/// `databaseInfo(_:)` report it (docs/PROTOCOL.md).
public struct DatabaseInfo: Sendable, Equatable {
    /// Its name (`?ns=name`).
    public let name: String
    /// Whether it is the server's default database (the one a connection without `use` gets).
    public let isDefault: Bool
    /// Whether its engine is open now (an idle database is closed until its next use).
    public let isOpen: Bool
    /// Its latest revision; nil while it is closed.
    public let rev: Int64?
    /// The bytes it takes on disk.
    public let bytes: Int64
    /// The connections using it now.
    public let connections: Int
    /// The folder that holds its files, on the server.
    public let directory: String
    /// Its quota of bytes stored; nil without one.
    public let maxBytes: Int64?
    /// Its quota of connections; nil without one.
    public let maxConnections: Int?
    /// The object as the server sent it (what `hearth db … --json` prints).
    public let json: JSONValue

    init(wire: JSONValue) {
        name = wire["name"]?.stringValue ?? "?"
        isDefault = wire["default"]?.boolValue ?? false
        isOpen = wire["open"]?.boolValue ?? false
        rev = wire["rev"]?.int64Value
        bytes = wire["bytes"]?.int64Value ?? 0
        connections = wire["connections"]?.int64Value.map { Int(clamping: $0) } ?? 0
        directory = wire["directory"]?.stringValue ?? ""
        maxBytes = wire["maxBytes"]?.int64Value
        maxConnections = wire["maxConnections"]?.int64Value.map { Int(clamping: $0) }
        json = wire
    }
}
