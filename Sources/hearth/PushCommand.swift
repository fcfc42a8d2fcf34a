import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth push <path> <json>`: adds a child under a new chronological push id.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Add a child with a new push id; prints the key as a JSON string.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path of the list.") var path: String
    @OptionGroup var input: ValueInput

    func run() async throws {
        try await reportingFailures {
            let value = try input.read()
            let database = try await connection.connect()
            let child = database.reference(withPath: path).childByAutoId()
            try await connection.bounded("push") { try await child.setValue(value) }
            try Output.line(.string(child.key ?? ""))
        }
    }
}
