import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth rules set <file>`: replaces the server's rules with a rules file.
struct RulesSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Replace the server's rules with a rules file (admin).",
        discussion: """
            The server compiles the file first: an invalid one is refused with its rule path, line \
            and column (exit status 1), and the old rules stay. The file is sent as text, so its \
            comments are kept in the server's rules file.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The rules file ({\"rules\":{…}}); - reads it from stdin.") var file: String

    func run() async throws {
        try await reportingFailures {
            let text = String(decoding: try readAll(path: file), as: UTF8.self)
            let database = try await connection.connect()
            let warning: String?
            do {
                warning = try await connection.bounded("setRules") { try await database.setRules(.string(text)) }
            } catch let error as HearthError where error.code == .invalidRules {
                throw CLIFailure.failed("\(file == "-" ? "stdin" : file): invalid rules: \(error.message)")
            }
            if let warning { writeError("hearth: warning: \(warning)") }
        }
    }
}
