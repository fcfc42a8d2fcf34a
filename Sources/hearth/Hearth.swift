import ArgumentParser
import HearthClient

#if canImport(Glibc)
import Glibc
#endif

/// `hearth`: the command-line client. Exit status 0 ok, 1 server, connection or data error
/// (message on stderr), 2 usage. Only JSON goes to stdout (the text of `cluster status` and
/// `db` aside).
@main
struct Hearth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Command-line client and tools for Hearth.",
        discussion: """
            Exit status: 0 ok, 1 server, connection or data error (message on stderr), 2 usage \
            (including invalid paths, keys, values and queries). Only JSON is written to stdout \
            (except the text of cluster status, db and triggers, which --json replaces). --db NAME chooses \
            one of the server's databases.
            """,
        version: Database.sdkVersion,
        subcommands: [
            GetCommand.self, SetCommand.self, UpdateCommand.self, RemoveCommand.self, PushCommand.self,
            ListenCommand.self, ImportCommand.self, ExportCommand.self, PingCommand.self, CheckCommand.self,
            TokenCommand.self, RulesCommand.self, ClusterCommand.self, DatabaseCommand.self, TriggerCommand.self,
        ])

    /// Accepted before the subcommand too (`hearth --url … get /`).
    @OptionGroup var connection: ConnectionOptions

    /// Runs the command, mapping every failure to exit status 1 or 2 with a message on stderr.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let failure as CLIFailure {
            writeError("hearth: \(failure.message)")
            Glibc.exit(failure.status)
        } catch let code as ExitCode {
            Glibc.exit(code.rawValue)
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            writeError(fullMessage(for: error))
            Glibc.exit(2)
        }
        Glibc.exit(0)
    }
}
