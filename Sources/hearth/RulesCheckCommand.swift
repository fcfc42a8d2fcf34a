import ArgumentParser
import HearthCore
import HearthJSON

/// `hearth rules check <file>`: compiles and type-checks a rules file offline, for CI.
struct RulesCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Check a rules file offline: compile and type-check it as hearthd would.",
        discussion: """
            Prints one JSON line, {"ok":true,"file":…} or {"ok":false,"file":…,"error":{"message":…,\
            "rulePath":…,"line":…,"column":…}}, and the verdict in words on stderr. Exit status 0 when \
            the rules are valid, 1 when they are not (or the file cannot be read).
            """)

    @Argument(help: "The rules file; - reads it from stdin.") var file: String

    func run() async throws {
        try await reportingFailures {
            let name = file == "-" ? "stdin" : file
            let text = String(decoding: try readAll(path: file), as: UTF8.self)
            var members = [JSONMember("ok", .bool(true)), JSONMember("file", .string(name))]
            do throws(RulesError) {
                _ = try RuleSet(source: text)
            } catch {
                members[0] = JSONMember("ok", .bool(false))
                members.append(
                    JSONMember(
                        "error",
                        .object([
                            JSONMember("message", .string(error.message)),
                            JSONMember("rulePath", error.rulePath.map(JSONValue.string) ?? .null),
                            JSONMember("line", error.line.map { .int(Int64($0)) } ?? .null),
                            JSONMember("column", error.column.map { .int(Int64($0)) } ?? .null),
                        ])))
                try Output.line(.object(members))
                throw CLIFailure.failed("\(name): invalid rules: \(error.message)")
            }
            try Output.line(.object(members))
            writeError("OK: \(name) is a valid rules file")
        }
    }
}
