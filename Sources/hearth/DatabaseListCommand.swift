import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth db list`: every database of the server, as a table or as JSON.
struct DatabaseListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the server's databases (admin).",
        discussion: """
            Prints a table (name, the default database marked *, open or closed, rev, size on \
            disk, connections, folder), sorted by name with the default first, or with --json the \
            server's answer {"databases":[…]}.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: #"Print {"databases":[…]} as JSON instead of a table."#)
    var json = false

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let databases = try await connection.bounded("listDatabases") { try await database.listDatabases() }
            let out = Output()
            if json {
                out.append(JSONValue.object(["databases": .array(databases.map(\.json))]).prettyJSONString + "\n")
            } else {
                out.append(Self.table(databases))
            }
            try out.flush()
        }
    }

    /// The databases as aligned columns under a header.
    static func table(_ databases: [DatabaseInfo]) -> String {
        let header = ["NAME", "STATE", "REV", "SIZE", "CONNECTIONS", "DIRECTORY"]
        let rows = databases.map { info -> [String] in
            [
                info.name + (info.isDefault ? "*" : ""), info.isOpen ? "open" : "closed",
                info.rev.map(String.init) ?? "-",
                Progress.bytes(Int(clamping: info.bytes)), String(info.connections), info.directory,
            ]
        }
        return TextTable.render([header] + rows) + "* the default database (used without --db)\n"
    }
}
