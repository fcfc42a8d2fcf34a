/// An error a request can fail with: a stable wire code (docs/PROTOCOL.md, "Errors") and a human
/// sentence that says what was wrong.
public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable error codes of the wire protocol, each defined here only: the raw value is the
    /// code on the wire, and HearthClient's `HearthError.Code` wraps these same values.
    public enum Code: String, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case unknownOp = "unknown_op"
        case invalidPath = "invalid_path"
        case invalidKey = "invalid_key"
        case invalidValue = "invalid_value"
        case invalidQuery = "invalid_query"
        case tooLarge = "too_large"
        case tooDeep = "too_deep"
        /// The rules do not allow the operation: `"<op> denied at <path>"`, never revealing a rule.
        case permissionDenied = "permission_denied"
        /// `auth` with a token that is neither a valid JWT nor an admin secret; the message says why.
        case invalidToken = "invalid_token"
        case indexNotDefined = "index_not_defined"
        case notFound = "not_found"
        case overloaded = "overloaded"
        case slowConsumer = "slow_consumer"
        case unavailable = "unavailable"
        case `internal` = "internal"
        /// `setRules` with a rules document that does not compile; the message names the rule's
        /// path, line and column.
        case invalidRules = "invalid_rules"
        /// The connection did not authenticate within the server's `authTimeoutSeconds`.
        case unauthenticated = "unauthenticated"
        /// A write retried after a long disconnect whose outcome the server no longer remembers
        /// (its write-id window); it was not applied again.
        case writeIDExpired = "write_id_expired"
        /// A replica's log forked from its leader's (docs/cluster.md, "A node that comes back").
        case diverged = "diverged"
        /// A write to a database that holds more than its `maxBytes` quota; removes still pass.
        case quotaExceeded = "quota_exceeded"
    }

    public let code: Code
    public let message: String
    /// For `overloaded`: how long to wait before retrying, when waiting helps.
    public let retryAfterMs: Int?

    public init(_ code: Code, _ message: String, retryAfterMs: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
