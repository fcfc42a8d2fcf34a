import ArgumentParser
import HearthClient

/// `hearth remove <path>`: deletes the value at a path.
struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Delete the value at a path; prints nothing.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path.") var path: String

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let reference = database.reference(withPath: path)
            try await connection.bounded("remove") { try await reference.removeValue() }
        }
    }
}
