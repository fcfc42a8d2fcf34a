import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth triggers list`: the database's triggers and what they deliver.
struct TriggerListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the database's triggers (admin).",
        discussion: """
            Prints a table (name, path pattern, kinds, URL, where it was declared), configured \
            triggers first, or with --json the server's answer {"triggers":[…]}.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: #"Print {"triggers":[…]} as JSON instead of a table."#)
    var json = false

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let triggers = try await connection.bounded("triggers") { try await database.listTriggers() }
            let out = Output()
            if json {
                out.append(JSONValue.object(["triggers": .array(triggers.map(\.json))]).prettyJSONString + "\n")
            } else if triggers.isEmpty {
                out.append("no triggers\n")
            } else {
                let header = ["NAME", "PATH", "ON", "URL", "SOURCE"]
                let rows = triggers.map { [$0.name, $0.path, $0.kinds.joined(separator: ","), $0.url, $0.source] }
                out.append(TextTable.render([header] + rows))
            }
            try out.flush()
        }
    }
}
