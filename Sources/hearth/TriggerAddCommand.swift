import ArgumentParser
import HearthClient
import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// `hearth triggers add NAME --path P --target URL (--secret-file F | --secret-env VAR) …`: adds
/// a trigger through the admin API. The signing secret is read here, from a local file or this
/// process's environment, and sent to the server inline: it is never a flag's value.
struct TriggerAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a trigger to the database (admin).",
        discussion: """
            The trigger POSTs each matching change to the target URL, signed with HMAC-SHA256 \
            keyed by its secret (at least 32 bytes: openssl rand -hex 32 > hook.secret). The \
            secret is read by this command from --secret-file (a local file; trailing newlines \
            dropped) or --secret-env (a variable of this command's environment) and sent to the \
            server over the connection (use hearths:// off the local machine). The trigger starts \
            at the log's current end: earlier writes are not sent. Prints the new trigger's \
            status, or with --json the server's answer.

            Example: hearth triggers add notify --path '/messages/{id}' --on create,update \
            --target http://127.0.0.1:8080/hook --secret-file hook.secret
            """)

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The trigger's name: 1–64 letters, digits, _ and -.") var name: String

    @Option(help: "The path pattern, e.g. /messages/{id}: literal keys and {name} wildcards.")
    var path: String

    @Option(help: "The kinds of change, comma-separated: create, update, delete, write (all three; the default).")
    var on: String = "write"

    @Option(help: "The http or https URL the events are POSTed to.")
    var target: String

    @Option(help: "A local file holding the signing secret (- reads it from stdin).")
    var secretFile: String?

    @Option(help: "A variable of this command's environment holding the signing secret.")
    var secretEnv: String?

    @Option(help: "An extra header sent with each delivery, NAME:VALUE (repeatable).")
    var header: [String] = []

    @Option(help: "How long one delivery may take, in milliseconds (server default 10000).")
    var timeoutMs: Int?

    @Option(help: "Deliveries in flight at once (server default 8).")
    var maxConcurrency: Int?

    @Option(help: "How long an event is retried before it becomes a dead letter, in seconds (server default 86400).")
    var maxAgeSeconds: Int?

    @Option(
        help: """
            A PEM file ON THE SERVER of the certificate authorities that verify an https target \
            (default: the server's system roots).
            """)
    var receiverCaFile: String?

    @Flag(help: "Print the server's answer as JSON.")
    var json = false

    func validate() throws {
        try Self.validateName(name)
        guard (secretFile == nil) != (secretEnv == nil) else {
            throw ValidationError("give exactly one of --secret-file and --secret-env")
        }
        for item in header where Self.headerParts(item) == nil {
            throw ValidationError("--header \(item): write NAME:VALUE")
        }
        let kinds = on.split(separator: ",").map { $0.trimmingCharacters(in: " ") }
        guard !kinds.isEmpty, kinds.allSatisfy({ ["create", "update", "delete", "write"].contains($0) }) else {
            throw ValidationError("--on takes create, update, delete and write, comma-separated")
        }
    }

    /// A trigger's name: 1–64 ASCII letters, digits, `_` and `-`.
    static func validateName(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 64,
            name.utf8.allSatisfy({ byte in
                (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else {
            throw ValidationError("a trigger's name is 1–64 letters, digits, _ and -, not \"\(name)\"")
        }
    }

    /// `NAME:VALUE` split at its first colon, the value's leading spaces dropped.
    static func headerParts(_ item: String) -> (name: String, value: String)? {
        guard let colon = item.firstIndex(of: ":"), colon != item.startIndex else { return nil }
        return (String(item[..<colon]), String(item[item.index(after: colon)...].drop { $0 == " " }))
    }

    /// The secret, read from the file or the environment.
    func secret() throws -> String {
        let bytes: [UInt8]
        if let secretFile {
            let contents = try readAll(path: secretFile)
            bytes = Array(contents.reversed().drop { $0 == 0x0A || $0 == 0x0D }.reversed())
        } else if let secretEnv {
            guard let value = getenv(secretEnv) else {
                throw CLIFailure.usage("--secret-env: the environment variable \(secretEnv) is not set")
            }
            bytes = Array(String(cString: value).utf8)
        } else {
            throw CLIFailure.usage("give exactly one of --secret-file and --secret-env")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CLIFailure.usage("the signing secret must be text (UTF-8), e.g. from openssl rand -hex 32")
        }
        guard bytes.count >= 32 else {
            throw CLIFailure.usage("the signing secret must be at least 32 bytes (openssl rand -hex 32)")
        }
        return text
    }

    /// The trigger object sent to the server.
    func trigger(secret: String) -> JSONValue {
        let kinds = on.split(separator: ",").map { JSONValue.string($0.trimmingCharacters(in: " ")) }
        var members = [
            JSONMember("name", .string(name)), JSONMember("path", .string(path)), JSONMember("on", .array(kinds)),
            JSONMember("url", .string(target)), JSONMember("secret", .string(secret)),
        ]
        if !header.isEmpty {
            let headers = header.compactMap(Self.headerParts).map { JSONMember($0.name, .string($0.value)) }
            members.append(JSONMember("headers", .object(headers)))
        }
        if let timeoutMs { members.append(JSONMember("timeoutMs", .int(Int64(timeoutMs)))) }
        if let maxConcurrency { members.append(JSONMember("maxConcurrency", .int(Int64(maxConcurrency)))) }
        if let maxAgeSeconds { members.append(JSONMember("maxAgeSeconds", .int(Int64(maxAgeSeconds)))) }
        if let receiverCaFile { members.append(JSONMember("caFile", .string(receiverCaFile))) }
        return .object(members)
    }

    func run() async throws {
        try await reportingFailures {
            let trigger = self.trigger(secret: try secret())
            let database = try await connection.connect()
            let added = try await connection.bounded("addTrigger") { try await database.addTrigger(trigger) }
            let out = Output()
            if json {
                out.append(added.json.prettyJSONString + "\n")
            } else {
                out.append(
                    "added trigger \(added.name): \(added.kinds.joined(separator: ",")) at \(added.path) → \(added.url)\n"
                )
            }
            try out.flush()
        }
    }
}

extension Substring {
    /// Without leading and trailing `character`s.
    fileprivate func trimmingCharacters(in character: Character) -> String {
        String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
