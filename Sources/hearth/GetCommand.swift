import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth get <path>`: prints the value (or a query's result, in its order) as one JSON line.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print the value at a path, or a query's result, as JSON.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path, e.g. /dinosaurs.") var path: String
    @OptionGroup var query: QueryOptions
    @Flag(help: "Replace each child of an object by true (not with query flags).") var shallow = false
    @Flag(help: "Include priorities (.priority, .value), as `export` writes them.") var export = false

    func validate() throws {
        if shallow && query.isSet { throw ValidationError("--shallow cannot be combined with query flags") }
    }

    func run() async throws {
        do { try await read() } catch { throw CLIFailure.readingTooMuch(error, at: path) }
    }

    private func read() async throws {
        let database = try await connection.connect()
        let reference = database.reference(withPath: path)
        let json: JSONValue
        if shallow {
            json = try await connection.bounded("get") { try await reference.getShallowData() }.json
        } else {
            let selected = query.apply(to: reference)
            let snapshot = try await connection.bounded("get") { try await selected.getData() }
            json = snapshot.outputJSON(export: export, ordered: query.isSet)
        }
        try Output.line(json)
    }
}
