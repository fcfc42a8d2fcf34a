import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth triggers remove NAME`: removes a trigger added through the admin API.
struct TriggerRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a trigger, with its progress and dead letters (admin).",
        discussion: """
            Only triggers added through the admin API (hearth triggers add) can be removed; one \
            declared in the server's configuration is removed there. An unknown NAME fails with \
            exit status 1 (not_found).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var trigger: TriggerNameArgument

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let name = trigger.name
            try await connection.bounded("removeTrigger") { try await database.removeTrigger(name) }
            let out = Output()
            out.append("removed trigger \(name)\n")
            try out.flush()
        }
    }
}
