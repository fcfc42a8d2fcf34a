import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth rules simulate`: what the rules decide for a request made as someone, without
/// making it.
struct RulesSimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Ask the server what its rules decide for a request made as someone (admin).",
        discussion: """
            Give the identity with --as admin, --as '{"uid":"alice","token":{"role":"editor"}}' (the \
            claims are the token's, as auth.token in rules) or --anonymous, and the request either as \
            <op> <path> [<value>] (op: get, subscribe, set, update, remove, push, setPriority) or as a \
            protocol request object with --request. Nothing is read or written. Prints \
            {"allowed":…,"rule":{"path":…,"expression":…},"explanation":…}; exit status 0 when the \
            request is allowed, 1 when it is denied (or on an error, which prints nothing on stdout).

            Example: hearth rules simulate --as '{"uid":"alice"}' set /posts/1 '{"title":"Hi"}'
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(
        name: .customLong("as"), help: #"The identity: admin, or a JSON object {"uid":…,"token":{…},"provider":…}."#)
    var identity: String?
    @Flag(help: "Simulate an unauthenticated connection.") var anonymous = false
    @Option(help: #"The whole request as JSON, e.g. '{"op":"get","path":"/posts","query":{"limitToFirst":10}}'."#)
    var request: JSONArgument?

    @Argument(help: "The operation: get, subscribe, set, update, remove, push or setPriority.") var op: String?
    @Argument(help: "The path.") var path: String?
    /// Every input no option took, so that a negative priority or value (`-5`) is a value rather
    /// than an unknown option; at most one, as JSON.
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp(
            "The value (set, push), the values (update) or the priority (setPriority), as JSON.", valueName: "value"))
    var unparsed: [String] = []

    /// The value argument, parsed; a bare word is refused with the quoting to use.
    private var value: JSONArgument? {
        get throws {
            // `.allUnrecognized` keeps the `--` that ends the options.
            let values = unparsed.filter { $0 != "--" }
            guard let text = values.first else { return nil }
            if text.hasPrefix("-"), (try? JSONParser.parse(text)) == nil {
                throw ValidationError("unknown option '\(text)'")
            }
            guard values.count == 1 else { throw ValidationError("give one value; '\(values[1])' is one too many") }
            do {
                return try JSONArgument.parse(text)
            } catch {
                throw ValidationError("the value '\(text)' is \(error)")
            }
        }
    }

    /// The request member that carries the value of `op`; nil for operations without one.
    private static func valueField(of op: String) throws -> String? {
        switch op {
        case "get", "subscribe", "remove": return nil
        case "set", "push": return "value"
        case "update": return "values"
        case "setPriority": return "priority"
        default:
            throw ValidationError(
                "unknown operation \(op); use get, subscribe, set, update, remove, push or setPriority")
        }
    }

    func validate() throws {
        switch (identity, anonymous) {
        case (nil, false): throw ValidationError("say whom to simulate: --as admin, --as '{\"uid\":…}' or --anonymous")
        case (.some, true): throw ValidationError("--as and --anonymous cannot be combined")
        default: break
        }
        _ = try simulatedIdentity()
        _ = try requestObject()
    }

    func run() async throws {
        var allowed = false
        try await reportingFailures {
            let identity = try simulatedIdentity()
            let request = try requestObject()
            let database = try await connection.connect()
            let verdict = try await connection.bounded("simulate") {
                try await database.simulate(request, as: identity)
            }
            try Output.line(verdict.json)
            allowed = verdict.allowed
        }
        if !allowed { throw ExitCode(1) }
    }

    private func simulatedIdentity() throws -> SimulatedIdentity {
        guard let identity else { return .unauthenticated }
        if identity == "admin" { return .admin }
        guard let json = try? JSONParser.parse(identity), json.objectMembers != nil else {
            throw ValidationError(#"--as must be admin or a JSON object such as '{"uid":"alice"}'"#)
        }
        guard case .string(let uid)? = json["uid"], !uid.isEmpty else {
            throw ValidationError(#"--as needs a non-empty "uid", e.g. '{"uid":"alice"}'"#)
        }
        let claims = json["token"] ?? .object([])
        guard claims.objectMembers != nil else {
            throw ValidationError(#"the "token" of --as must be an object of claims, e.g. {"role":"editor"}"#)
        }
        let provider: String?
        switch json["provider"] {
        case nil, .null?: provider = nil
        case .string(let text)?: provider = text
        default: throw ValidationError(#"the "provider" of --as must be a string"#)
        }
        return .user(uid: uid, claims: claims, provider: provider)
    }

    /// The request to simulate, from --request or from <op> <path> [<value>].
    private func requestObject() throws -> JSONValue {
        if let request {
            guard op == nil else { throw ValidationError("give the request either with --request or as <op> <path>") }
            guard request.value.objectMembers != nil else {
                throw ValidationError(#"--request must be a request object, e.g. '{"op":"get","path":"/posts"}'"#)
            }
            return request.value
        }
        guard let op, let path else {
            throw ValidationError("give the request: <op> <path> [<value>], or --request '{…}'")
        }
        var members = [JSONMember("op", .string(op)), JSONMember("path", .string(path))]
        switch (try Self.valueField(of: op), try value) {
        case (let field?, let value?): members.append(JSONMember(field, value.value))
        case (.some, nil): throw ValidationError("\(op) needs a value as JSON after the path")
        case (nil, .some): throw ValidationError("\(op) takes no value")
        case (nil, nil): break
        }
        return .object(members)
    }
}
