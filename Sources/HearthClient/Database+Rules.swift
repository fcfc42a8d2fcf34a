public import HearthJSON

/// The admin operations on the security rules (the connection must be authenticated with an
/// admin secret; anyone else gets `permission_denied`).
extension Database {
    /// The rules document in force (`{"rules":{…}}`), or nil when the server runs without rules.
    public func getRules() async throws -> JSONValue? {
        let response = try await adminRequest([JSONMember("op", .string("getRules"))])
        guard let rules = response["rules"], rules != .null else { return nil }
        return rules
    }

    /// Replaces the rules with `document`: the whole rules document as the rules file holds it,
    /// an object (`{"rules":{…}}`) or its text as a string (comments allowed). The server
    /// compiles it first: an invalid document throws `invalid_rules` (the message names the
    /// rule's path, line and column) and the old rules stay. Returns the server's warning, if
    /// any.
    @discardableResult
    public func setRules(_ document: JSONValue) async throws -> String? {
        let response = try await adminRequest([JSONMember("op", .string("setRules")), JSONMember("rules", document)])
        return response["warning"]?.stringValue
    }

    /// What the rules decide for `request` (a `get`, `subscribe`, `set`, `update`, `remove`,
    /// `push`, `setPriority`, `transaction` or `onDisconnect` request object, e.g.
    /// `{"op":"set","path":"/posts/1","value":…}`) made as `identity`, against the current data,
    /// without performing it.
    public func simulate(_ request: JSONValue, as identity: SimulatedIdentity) async throws -> RuleSimulation {
        let response = try await adminRequest([
            JSONMember("op", .string("simulate")), JSONMember("as", identity.json), JSONMember("request", request),
        ])
        return RuleSimulation(response: response)
    }

    private func adminRequest(_ body: [JSONMember]) async throws -> JSONValue {
        try await withCheckedThrowingContinuation { continuation in
            repo.request(body) { continuation.resume(with: $0) }
        }
    }
}
