public import HearthJSON

/// Whom `Database.simulate(_:as:)` evaluates a request as.
public enum SimulatedIdentity: Sendable, Equatable {
    /// An unauthenticated connection (`auth == null` in rules).
    case unauthenticated
    /// An admin connection, which the rules do not apply to.
    case admin
    /// A user as a verified token would give it: `uid` (`sub`), the token's other `claims` (a
    /// JSON object) and its `provider` (`"custom"` when nil and not among the claims).
    case user(uid: String, claims: JSONValue = .object([]), provider: String? = nil)

    /// The `as` member of a `simulate` request.
    var json: JSONValue {
        switch self {
        case .unauthenticated:
            return .null
        case .admin:
            return .string("admin")
        case .user(let uid, let claims, let provider):
            var members = [JSONMember("uid", .string(uid)), JSONMember("token", claims)]
            if let provider { members.append(JSONMember("provider", .string(provider))) }
            return .object(members)
        }
    }
}
