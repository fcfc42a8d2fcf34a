internal import HearthCore
internal import HearthJSON

/// An error reported by HearthClient: a stable code and a sentence for people.
///
/// Server errors carry the wire code of the protocol (`invalid_path`, `unavailable`, …); the
/// client adds its own codes for failures it detects itself.
public struct HearthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable error codes: the protocol's, plus the client's own.
    public enum Code: String, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case unknownOp = "unknown_op"
        case invalidPath = "invalid_path"
        case invalidKey = "invalid_key"
        case invalidValue = "invalid_value"
        case invalidQuery = "invalid_query"
        case tooLarge = "too_large"
        case tooDeep = "too_deep"
        /// The rules do not allow the operation (`path` names where it was denied).
        case permissionDenied = "permission_denied"
        /// `auth` with a token that is neither a valid JWT nor an admin secret; the message says why.
        case invalidToken = "invalid_token"
        /// `setRules` with a rules document that does not compile; the message names the rule's
        /// path, line and column.
        case invalidRules = "invalid_rules"
        /// The connection did not authenticate within the server's `authTimeoutSeconds`.
        case unauthenticated = "unauthenticated"
        case indexNotDefined = "index_not_defined"
        case notFound = "not_found"
        case overloaded = "overloaded"
        case slowConsumer = "slow_consumer"
        case unavailable = "unavailable"
        case `internal` = "internal"
        /// A write retried after a long disconnect whose outcome the server no longer remembers
        /// (its write-id window); it was not applied again.
        case writeIDExpired = "write_id_expired"
        /// The URL given to `Database` is not `hearth://host[:port]`.
        case invalidURL = "invalid_url"
        /// A transaction lost the compare-and-set race 25 times in a row.
        case maxRetries = "maxretry"
        /// Nothing listens at the URL's host and port: the connection was refused.
        case connectionRefused = "connection_refused"
        /// The URL's host name does not resolve to an address.
        case unknownHost = "unknown_host"
        /// The connection failed otherwise: timed out, network unreachable, closed before the
        /// server's hello, or the client was taken offline.
        case connectionFailed = "connection_failed"
        /// The write was dropped by `purgeOutstandingWrites()` before the server answered it.
        case writeCanceled = "write_canceled"
        /// A cluster operation (`clusterStatus()`, `failover(to:)`) sent to a server that is not
        /// part of a cluster (its hello announced none); the message quotes the server's refusal.
        case notClustered = "not_clustered"
    }

    public let code: Code
    public let message: String
    /// For `permission_denied`: the path of the denied operation (the one the request named).
    public internal(set) var path: String?
    /// For `overloaded` when waiting helps: the milliseconds the server asks to wait before retrying.
    public internal(set) var retryAfterMs: Int?

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

extension HearthError {
    /// The client-side twin of a core validation error (same code, same message).
    init(_ error: DatabaseError) {
        self.init(Code(rawValue: error.code.rawValue) ?? .internal, error.message)
    }

    /// A server error object `{"code":…,"message":…}`.
    init(wire: JSONValue) {
        let code = wire["code"]?.stringValue.flatMap(Code.init(rawValue:)) ?? .internal
        self.init(code, wire["message"]?.stringValue ?? "the server reported an error without a message")
        self.retryAfterMs = wire["retryAfterMs"]?.int64Value.map { Int(clamping: $0) }
    }
}
