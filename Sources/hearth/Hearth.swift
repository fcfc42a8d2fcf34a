import ArgumentParser

/// `hearth`: the command-line client. Exit status 0 ok, 1 server or data error (message on
/// stderr), 2 usage. Only JSON goes to stdout.
@main
struct Hearth: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Command-line tools for Hearth.",
        subcommands: [CheckCommand.self])
}
