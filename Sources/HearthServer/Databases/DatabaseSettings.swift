/// How a daemon serves several databases (docs/configuration.md, "Databases"): the default
/// database's name, whether unknown names are created on first use, how many databases it may
/// hold, when an unused one closes, how long deleted ones are kept, the host names that carry a
/// database's name as their first label, and each database's own settings.
public struct DatabaseSettings: Sendable, Equatable {
    /// The name of the database kept in the data directory itself (`defaultDatabase`).
    public var defaultName = "default"
    /// Whether a request naming an unknown database creates it (`autoCreateDatabases`); nil:
    /// yes on a loopback address, no on a reachable one.
    public var autoCreate: Bool?
    /// Databases the daemon may hold, the default one included (`maxDatabases`).
    public var maxDatabases = 10_000
    /// A database no connection uses closes after this many seconds (`idleDatabaseSeconds`;
    /// 0 keeps every database open once opened). The default database never closes.
    public var idleCloseSeconds = 300
    /// How long a deleted database's folder stays in the trash before it is removed
    /// (`deletedDatabaseRetentionHours`; 0 keeps it until an operator removes it).
    public var trashRetentionHours = 168
    /// Host names under which `<name>.<domain>` addresses database `<name>` over HTTP
    /// (`databaseDomains`).
    public var domains = ["localhost"]
    /// Threads the databases' engines share (`engineThreads`; nil: one per core, at least two).
    /// A database's engine runs on one of them; different databases' writes run in parallel.
    public var engineThreads: Int?
    /// Settings of single databases by name (`databases`); the entry `"*"` applies to every
    /// database without an entry of its own.
    public var perDatabase: [String: PerDatabase] = [:]

    /// One database's own settings.
    public struct PerDatabase: Sendable, Equatable {
        /// Its rules file, instead of the server's `rulesFile`.
        public var rulesFile: String?
        /// Admin secrets that are admin for this database only.
        public var adminSecrets: [String] = []
        /// Refuse writes (not removes) once the database holds more than this many bytes on disk.
        public var maxBytes: Int64?
        /// Connections that may use the database at once.
        public var maxConnections: Int?
        /// The database's triggers (`triggers`), instead of the server's.
        public var triggers: [TriggerSettings] = []

        public init() {}
    }

    public init() {}

    /// The settings that apply to `name`.
    public func settings(for name: String) -> PerDatabase {
        perDatabase[name] ?? perDatabase["*"] ?? PerDatabase()
    }

    /// Whether unknown names are created on first use, for a daemon bound to `host`.
    func createsOnFirstUse(host: String) -> Bool { autoCreate ?? isLoopback(host) }
}
