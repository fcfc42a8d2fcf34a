import ArgumentParser
import HearthClient

/// `hearth update <path> <json>`: an atomic multi-path update.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Write several locations below a path at once, atomically; prints nothing.",
        discussion: """
            The value is an object whose keys are relative paths (slashes allowed), e.g. \
            '{"stegosaurus/height":4,"rex":null}'; null deletes. No path may be at or below another.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path the keys are relative to.") var path: String
    @OptionGroup var input: ValueInput

    func run() async throws {
        try await reportingFailures {
            guard let members = try input.read().objectMembers else {
                throw CLIFailure.usage("the value of update must be a JSON object of relative paths to values")
            }
            let database = try await connection.connect()
            let reference = database.reference(withPath: path)
            try await connection.bounded("update") {
                let values = [String: Any](
                    members.map { ($0.key, $0.value as Any) }, uniquingKeysWith: { _, last in last })
                try await reference.updateChildValues(values)
            }
        }
    }
}
