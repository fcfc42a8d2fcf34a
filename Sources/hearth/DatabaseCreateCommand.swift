import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth db create NAME`: a new, empty database.
struct DatabaseCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create an empty database (admin).",
        discussion: """
            Fails (exit 1) when the database exists already or the server holds its \
            maxDatabases. Prints what the server says of the new database, or with --json its \
            answer's database object.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var database: DatabaseNameArgument

    @Flag(help: "Print the database as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let client = try await connection.connect()
            let name = database.name
            let info = try await connection.bounded("createDatabase") { try await client.createDatabase(name) }
            let out = Output()
            if json {
                out.append(info.json.prettyJSONString + "\n")
            } else {
                out.append("created database \(info.name) in \(info.directory)\n")
            }
            try out.flush()
        }
    }
}
