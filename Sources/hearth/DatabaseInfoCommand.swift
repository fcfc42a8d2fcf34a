import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth db info NAME`: what the server knows of one database.
struct DatabaseInfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "Show one database: state, rev, size, connections, folder, quotas (admin).",
        discussion: """
            Prints one line per property, or with --json the server's database object. An \
            unknown database fails with exit status 1 (not_found).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var database: DatabaseNameArgument

    @Flag(help: "Print the database as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let client = try await connection.connect()
            let name = database.name
            let info = try await connection.bounded("databaseInfo") { try await client.databaseInfo(name) }
            let out = Output()
            out.append(json ? info.json.prettyJSONString + "\n" : Self.text(info))
            try out.flush()
        }
    }

    /// One line per property, names and values in two columns.
    static func text(_ info: DatabaseInfo) -> String {
        TextTable.render([
            ["name", info.name],
            ["default", info.isDefault ? "yes" : "no"],
            ["state", info.isOpen ? "open" : "closed"],
            ["rev", info.rev.map(String.init) ?? "- (closed)"],
            ["size", size(info.bytes)],
            ["connections", String(info.connections)],
            ["directory", info.directory],
            ["maxBytes", info.maxBytes.map(size) ?? "none"],
            ["maxConnections", info.maxConnections.map(String.init) ?? "none"],
        ])
    }

    /// `975 bytes`, or `12.3 MiB (12897484 bytes)`.
    private static func size(_ bytes: Int64) -> String {
        let text = Progress.bytes(Int(clamping: bytes))
        return text.hasSuffix(" bytes") ? text : "\(text) (\(bytes) bytes)"
    }
}
