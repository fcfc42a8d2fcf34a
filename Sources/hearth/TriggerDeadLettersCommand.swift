import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth triggers dead-letters NAME [--limit N]`: the events that kept failing.
struct TriggerDeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters", abstract: "List a trigger's dead letters (admin).",
        discussion: """
            An event that keeps failing past the trigger's maxAgeSeconds moves to its dead-letter \
            list, kept until it is replayed (hearth triggers replay) or the trigger removed. \
            Prints a table (id, rev, path, kind, attempts, last error), oldest first, or with \
            --json the server's answer {"deadLetters":[…]}.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var trigger: TriggerNameArgument

    @Option(help: "At most this many (1–10000).")
    var limit = 100

    @Flag(help: #"Print {"deadLetters":[…]} as JSON instead of a table."#)
    var json = false

    func validate() throws {
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be in 1...10000") }
    }

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let name = trigger.name
            let limit = self.limit
            let letters = try await connection.bounded("deadLetters") {
                try await database.deadLetters(name, limit: limit)
            }
            let out = Output()
            if json {
                out.append(JSONValue.object(["deadLetters": .array(letters.map(\.json))]).prettyJSONString + "\n")
            } else if letters.isEmpty {
                out.append("no dead letters\n")
            } else {
                let header = ["ID", "REV", "PATH", "KIND", "ATTEMPTS", "LAST-ERROR"]
                let rows = letters.map {
                    [$0.id, String($0.rev), $0.path, $0.kind, String($0.attempts), $0.lastError]
                }
                out.append(TextTable.render([header] + rows))
            }
            try out.flush()
        }
    }
}
