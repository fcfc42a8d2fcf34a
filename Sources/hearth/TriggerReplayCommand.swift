import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth triggers replay NAME [--id ID]…`: sends dead letters again.
struct TriggerReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Send a trigger's dead letters again (admin).",
        discussion: """
            Sends the trigger's dead letters again, in their order and ahead of new events: all \
            of them, or those --id names (see hearth triggers dead-letters). Those delivered leave \
            the list. Also clears a trigger's lost state. Prints how many were queued.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var trigger: TriggerNameArgument

    @Option(name: .customLong("id"), help: "Only the dead letter with this event id (repeatable).")
    var ids: [String] = []

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let name = trigger.name
            let ids = self.ids.isEmpty ? nil : self.ids
            let replayed = try await connection.bounded("replayTrigger") {
                try await database.replayTrigger(name, ids: ids)
            }
            let out = Output()
            out.append("queued \(replayed) dead letter\(replayed == 1 ? "" : "s") of \(name) for delivery\n")
            try out.flush()
        }
    }
}
