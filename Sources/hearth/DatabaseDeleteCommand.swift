import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth db delete NAME [--purge]`: deletes a database, saying where its data went.
struct DatabaseDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a database; its files move to the trash, or --purge removes them (admin).",
        discussion: """
            The database's files move to the server's <data-dir>/trash/<name>-<time>/ (kept for \
            the server's configured time), and the command prints that folder; with --purge they \
            are removed for good. The name can be created again at once, empty. The default \
            database cannot be deleted. With --json prints the server's answer, \
            {"deleted":…,"movedTo":…} or {"deleted":…,"purged":true}.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var database: DatabaseNameArgument

    @Flag(help: "Remove the database's files for good instead of moving them to the trash.")
    var purge = false

    @Flag(help: "Print the server's answer as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let client = try await connection.connect()
            let name = database.name
            let purge = self.purge
            let deletion = try await connection.bounded("deleteDatabase") {
                try await client.deleteDatabase(name, purge: purge)
            }
            let out = Output()
            if json {
                var members = [JSONMember("deleted", .string(deletion.name))]
                if let movedTo = deletion.movedTo { members.append(JSONMember("movedTo", .string(movedTo))) }
                if deletion.purged { members.append(JSONMember("purged", .bool(true))) }
                out.append(JSONValue.object(members).jsonString + "\n")
            } else if let movedTo = deletion.movedTo {
                out.append("deleted database \(deletion.name); its data moved to \(movedTo)\n")
            } else {
                out.append("deleted database \(deletion.name); its data was purged\n")
            }
            try out.flush()
        }
    }
}
