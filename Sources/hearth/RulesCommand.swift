import ArgumentParser

/// `hearth rules get|set|check|simulate`: the server's security rules.
struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules", abstract: "Read, replace, check and try out security rules.",
        discussion: """
            get, set and simulate need an admin connection: --token (or $HEARTH_TOKEN) with one of \
            the server's admin secrets. check works offline.
            """,
        subcommands: [RulesGetCommand.self, RulesSetCommand.self, RulesCheckCommand.self, RulesSimulateCommand.self])
}
