import ArgumentParser
import HearthClient

/// `hearth set <path> <json>`: replaces the value at a path (null deletes).
struct SetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Replace the value at a path (null deletes); prints nothing.",
        discussion: "`.priority` and `.value` members set priorities, as in an export.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path.") var path: String
    @OptionGroup var input: ValueInput

    func run() async throws {
        try await reportingFailures {
            let value = try input.read()
            let database = try await connection.connect()
            let reference = database.reference(withPath: path)
            try await connection.bounded("set") { try await reference.setValue(value) }
        }
    }
}
