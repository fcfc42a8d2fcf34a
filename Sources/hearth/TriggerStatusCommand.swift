import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth triggers status [NAME]`: how the triggers are doing.
struct TriggerStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show how the database's triggers are doing (admin).",
        discussion: """
            Prints one row per trigger (or only NAME's): its state (idle, delivering, retrying, \
            lost), the revision delivered up to, the lag in revisions and in seconds, the \
            deliveries since the server started (delivered, failed, retried), the dead letters \
            waiting, the revisions lost to the backlog bound, and the last error. With --json \
            prints the server's status objects. An unknown NAME fails with exit status 1.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "Only this trigger.") var name: String?

    @Flag(help: "Print the status as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            var triggers = try await connection.bounded("triggers") { try await database.listTriggers() }
            if let name {
                triggers = triggers.filter { $0.name == name }
                if triggers.isEmpty { throw CLIFailure.failed("not_found: there is no trigger \"\(name)\"") }
            }
            let out = Output()
            if json {
                let value: JSONValue =
                    name == nil ? .object(["triggers": .array(triggers.map(\.json))]) : triggers[0].json
                out.append(value.prettyJSONString + "\n")
            } else if triggers.isEmpty {
                out.append("no triggers\n")
            } else {
                out.append(Self.table(triggers))
            }
            try out.flush()
        }
    }

    /// The statuses as aligned columns under a header.
    static func table(_ triggers: [TriggerInfo]) -> String {
        let header = [
            "NAME", "STATE", "DELIVERED-REV", "LAG(revs)", "LAG(s)", "DELIVERED", "FAILED", "RETRIED", "DEAD", "LOST",
            "LAST-ERROR",
        ]
        let rows = triggers.map { trigger -> [String] in
            [
                trigger.name, trigger.state, String(trigger.deliveredRev), String(trigger.lagRevisions),
                seconds(trigger.lagSeconds), String(trigger.delivered), String(trigger.failed),
                String(trigger.retried), String(trigger.deadLetters), String(trigger.lostRevisions),
                trigger.lastError ?? "-",
            ]
        }
        return TextTable.render([header] + rows)
    }

    /// `0`, `1.5`, `42`: tenths below ten seconds, whole seconds above.
    private static func seconds(_ value: Double) -> String {
        guard value.isFinite, value > 0 else { return "0" }
        if value >= 10 { return String(Int(value.rounded())) }
        return String((value * 10).rounded() / 10)
    }
}
