import ArgumentParser
import HearthJSON

/// A command-line argument holding one JSON document (`'"text"'`, `12`, `-5`, `'{"a":1}'`).
struct JSONArgument: ExpressibleByArgument, Sendable {
    let value: JSONValue

    init?(argument: String) {
        guard let value = try? JSONParser.parse(argument) else { return nil }
        self.value = value
    }

    /// The argument as JSON, or an error that says how to write it: a bare word (`a`) is not
    /// JSON, and the suggestion is the quoted string (`'"a"'`). For `@Option(transform:)`, whose
    /// errors ArgumentParser shows after "The value … is invalid for --flag".
    static func parse(_ argument: String) throws -> JSONArgument {
        do {
            return JSONArgument(value: try JSONParser.parse(argument))
        } catch {
            throw InvalidJSONArgument(argument: argument, reason: "\(error)")
        }
    }

    private init(value: JSONValue) { self.value = value }
}

/// Why an argument is not JSON, with the quoting to use when it looks like a bare string.
struct InvalidJSONArgument: Error, CustomStringConvertible {
    let argument: String
    let reason: String

    var description: String {
        if argument.hasPrefix("--") { return "not valid JSON (\(reason)); the value is missing before \(argument)" }
        return "not valid JSON (\(reason))" + (Self.quotingHint(for: argument).map { "; \($0)" } ?? "")
    }

    /// For a bare word, the same text as a JSON string inside shell quotes: `a` → `'"a"'`.
    static func quotingHint(for argument: String) -> String? {
        guard let first = argument.unicodeScalars.first, !"{[\"-0123456789".unicodeScalars.contains(first),
            !["true", "false", "null"].contains(argument), !argument.contains("'")
        else { return nil }
        let quoted = JSONValue.string(argument).jsonString
        return "a string is written in JSON's double quotes, inside the shell's single quotes: '\(quoted)'"
    }
}

/// The value of a write: a JSON argument, `-` for stdin, or `--file`.
struct ValueInput: ParsableArguments {
    /// Every input no option took, so that a negative number (`-5`) is a value rather than an
    /// unknown option; `validate` allows one, and refuses what looks like an option.
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("The value as JSON (-5 too); - reads it from stdin.", valueName: "json"))
    var unparsed: [String] = []

    /// The inputs without the `--` that ends the options (which `.allUnrecognized` keeps).
    private var values: [String] { unparsed.filter { $0 != "--" } }

    var json: String? { values.first }

    @Option(help: "Read the value from this file instead.")
    var file: String?

    func validate() throws {
        if let option = values.first(where: { $0.hasPrefix("-") && $0 != "-" && (try? JSONParser.parse($0)) == nil }) {
            throw ValidationError("unknown option '\(option)'")
        }
        if values.count > 1 {
            throw ValidationError("give one value; '\(values[1])' is one too many (quote a value with spaces)")
        }
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
            let hint = file == nil && json != "-" ? InvalidJSONArgument.quotingHint(for: json ?? "") : nil
            throw CLIFailure.usage("\(source) is not valid JSON: \(error)" + (hint.map { "; \($0)" } ?? ""))
        }
    }
}
