public import HearthCore
internal import HearthJSON

/// An error reported by HearthClient: a stable code and a sentence for people.
///
/// Server errors carry the protocol's wire code (`invalid_path`, `unavailable`, …), defined once by
/// the server's `DatabaseError.Code`; the client adds its own codes for failures it detects itself.
public struct HearthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The protocol's error codes, the server's own definition (docs/PROTOCOL.md "Errors"). The
    /// client uses them too, for the checks it runs before sending (an invalid path, value or query).
    public typealias ServerCode = DatabaseError.Code

    /// The codes of failures the client detects itself; a server never sends them.
    public enum ClientCode: String, Sendable, CaseIterable {
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

    /// A stable error code: one of the protocol's or one of the client's own.
    ///
    /// Compare it by name, whichever side it comes from (`error.code == .permissionDenied`,
    /// `case .connectionRefused:`), or switch over `.server` and `.client` to tell the two apart.
    /// Its `rawValue` is the wire code (`permission_denied`).
    public enum Code: Hashable, Sendable, CaseIterable, RawRepresentable, CustomStringConvertible {
        /// A code of the protocol: the server answered with it, or the client's own check before
        /// sending found what the server would have.
        case server(ServerCode)
        /// A failure the client detected itself.
        case client(ClientCode)

        /// The code whose wire form is `rawValue`; nil for a string that is no code.
        public init?(rawValue: String) {
            if let code = ServerCode(rawValue: rawValue) {
                self = .server(code)
            } else if let code = ClientCode(rawValue: rawValue) {
                self = .client(code)
            } else {
                return nil
            }
        }

        /// The wire form: `permission_denied`, `connection_refused`, …
        public var rawValue: String {
            switch self {
            case .server(let code): return code.rawValue
            case .client(let code): return code.rawValue
            }
        }

        /// Every code: the protocol's, then the client's.
        public static var allCases: [Code] {
            ServerCode.allCases.map(Code.server) + ClientCode.allCases.map(Code.client)
        }

        /// The code's name (`permissionDenied`).
        public var description: String {
            switch self {
            case .server(let code): return "\(code)"
            case .client(let code): return "\(code)"
            }
        }
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

/// The protocol's codes by name, so that a server code reads like a client one
/// (`error.code == .permissionDenied`). What each means is documented on `DatabaseError.Code`.
extension HearthError.Code {
    public static var badRequest: Self { .server(.badRequest) }
    public static var unknownOp: Self { .server(.unknownOp) }
    public static var invalidPath: Self { .server(.invalidPath) }
    public static var invalidKey: Self { .server(.invalidKey) }
    public static var invalidValue: Self { .server(.invalidValue) }
    public static var invalidQuery: Self { .server(.invalidQuery) }
    public static var tooLarge: Self { .server(.tooLarge) }
    public static var tooDeep: Self { .server(.tooDeep) }
    public static var permissionDenied: Self { .server(.permissionDenied) }
    public static var invalidToken: Self { .server(.invalidToken) }
    public static var indexNotDefined: Self { .server(.indexNotDefined) }
    public static var notFound: Self { .server(.notFound) }
    public static var overloaded: Self { .server(.overloaded) }
    public static var slowConsumer: Self { .server(.slowConsumer) }
    public static var unavailable: Self { .server(.unavailable) }
    public static var `internal`: Self { .server(.internal) }
    public static var invalidRules: Self { .server(.invalidRules) }
    public static var unauthenticated: Self { .server(.unauthenticated) }
    public static var writeIDExpired: Self { .server(.writeIDExpired) }
    public static var diverged: Self { .server(.diverged) }
    public static var quotaExceeded: Self { .server(.quotaExceeded) }
}

/// The client's own codes by name (`error.code == .connectionRefused`).
extension HearthError.Code {
    public static var invalidURL: Self { .client(.invalidURL) }
    public static var maxRetries: Self { .client(.maxRetries) }
    public static var connectionRefused: Self { .client(.connectionRefused) }
    public static var unknownHost: Self { .client(.unknownHost) }
    public static var connectionFailed: Self { .client(.connectionFailed) }
    public static var writeCanceled: Self { .client(.writeCanceled) }
    public static var notClustered: Self { .client(.notClustered) }
}

extension HearthError {
    /// The client-side twin of a core validation error (same code, same message).
    init(_ error: DatabaseError) {
        self.init(.server(error.code), error.message)
    }

    /// A server error object `{"code":…,"message":…}`; a code the client does not know is
    /// `internal`.
    init(wire: JSONValue) {
        let code = wire["code"]?.stringValue.flatMap(Code.init(rawValue:)) ?? .internal
        self.init(code, wire["message"]?.stringValue ?? "the server reported an error without a message")
        self.retryAfterMs = wire["retryAfterMs"]?.int64Value.map { Int(clamping: $0) }
    }
}
