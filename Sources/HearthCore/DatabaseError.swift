/// An error a request can fail with: a stable wire code (docs/PROTOCOL.md, "Errors") and a human
/// sentence that says what was wrong.
public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable error codes of the wire protocol.
    public enum Code: String, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case unknownOp = "unknown_op"
        case invalidPath = "invalid_path"
        case invalidKey = "invalid_key"
        case invalidValue = "invalid_value"
        case invalidQuery = "invalid_query"
        case tooLarge = "too_large"
        case tooDeep = "too_deep"
        case permissionDenied = "permission_denied"
        case invalidToken = "invalid_token"
        case indexNotDefined = "index_not_defined"
        case notFound = "not_found"
        case overloaded = "overloaded"
        case slowConsumer = "slow_consumer"
        case unavailable = "unavailable"
        case `internal` = "internal"
        case invalidRules = "invalid_rules"
        case unauthenticated = "unauthenticated"
        case writeIdExpired = "write_id_expired"
        /// A replica's log forked from its leader's (docs/cluster.md, "A node that comes back").
        case diverged = "diverged"
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
