import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth rules get`: prints the rules in force (`null` when the server runs without rules).
struct RulesGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print the rules document in force (admin).",
        discussion: "Prints null, with a note on stderr, when the server runs open (without rules).")

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let rules = try await connection.bounded("getRules") { try await database.getRules() }
            let out = Output()
            if let rules {
                out.append(rules.prettyJSONString + "\n")
            } else {
                out.append("null\n")
                writeError("hearth: the server runs without rules (open): everyone may read and write everything")
            }
            try out.flush()
        }
    }
}
