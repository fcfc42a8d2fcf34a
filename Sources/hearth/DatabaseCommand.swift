import ArgumentParser

/// `hearth db list|create|info|delete`: the server's databases.
struct DatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "List, create, inspect and delete the server's databases (admin).",
        discussion: """
            A server holds several databases, each with its own tree, rules and files; every other \
            command uses the one --db NAME names (the URL's ?ns=NAME), or the server's default \
            database. A name is 1–63 lowercase letters, digits and hyphens, not starting or \
            ending with a hyphen. On a server with rules these commands need an admin secret \
            (--token or $HEARTH_TOKEN). Each prints text, or with --json the server's answer.
            """,
        subcommands: [
            DatabaseListCommand.self, DatabaseCreateCommand.self, DatabaseInfoCommand.self,
            DatabaseDeleteCommand.self,
        ])
}
