import ArgumentParser
import HearthJSON

/// A command-line argument holding one JSON document (`'"text"'`, `12`, `'{"a":1}'`).
struct JSONArgument: ExpressibleByArgument, Sendable {
    let value: JSONValue

    init?(argument: String) {
        guard let value = try? JSONParser.parse(argument) else { return nil }
        self.value = value
    }
}

/// The value of a write: a JSON argument, `-` for stdin, or `--file`.
struct ValueInput: ParsableArguments {
    @Argument(help: "The value as JSON; - reads it from stdin.")
    var json: String?

    @Option(help: "Read the value from this file instead.")
    var file: String?

    func validate() throws {
        switch (json, file) {
        case (nil, nil): throw ValidationError("give the value as JSON, - for stdin, or --file <file>")
        case (.some, .some): throw ValidationError("give the value either as an argument or with --file, not both")
        default: break
        }
    }

    /// The parsed value; a malformed document is a usage error (status 2).
    func read() throws -> JSONValue {
        let bytes: [UInt8]
        let source: String
        if let file {
            bytes = try readAll(path: file)
            source = file
        } else if json == "-" {
            bytes = try readAll(path: nil)
            source = "stdin"
        } else {
            bytes = Array((json ?? "").utf8)
            source = "the value argument"
        }
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw CLIFailure.usage("\(source) is not valid JSON: \(error)")
        }
    }
}
