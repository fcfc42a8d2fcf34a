import ArgumentParser

/// `hearth triggers list|status|add|remove|dead-letters|replay`: the database's triggers.
struct TriggerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "triggers",
        abstract: "Manage the database's triggers: signed webhooks for matching writes (admin).",
        discussion: """
            A trigger POSTs a signed JSON event to a URL for each write that changes a location \
            matching its path pattern (e.g. /messages/{id}), at least once and in order. These \
            commands act on the database --db names (else the server's default one) and need an \
            admin secret on a server with rules (--token or $HEARTH_TOKEN). Triggers declared in \
            the server's configuration are listed but cannot be removed here.
            """,
        subcommands: [
            TriggerListCommand.self, TriggerStatusCommand.self, TriggerAddCommand.self, TriggerRemoveCommand.self,
            TriggerDeadLettersCommand.self, TriggerReplayCommand.self,
        ])
}

/// The `NAME` argument of the trigger commands.
struct TriggerNameArgument: ParsableArguments {
    @Argument(help: "The trigger's name.") var name: String

    func validate() throws {
        try TriggerAddCommand.validateName(name)
    }
}
