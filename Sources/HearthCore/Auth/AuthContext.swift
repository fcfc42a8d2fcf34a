public import HearthJSON

/// Who a connection is, as the rules see it (docs/security.md, "Identity"): a verified end user, or an admin
/// that bypasses rules. An unauthenticated connection has no `AuthContext` (`auth == null`).
public struct AuthContext: Sendable {
    /// What kind of identity this is.
    public enum Kind: Sendable, Equatable {
        /// Authenticated with an admin secret: rules are skipped (limits still apply).
        case admin
        /// Authenticated with a verified token: rules see `auth.uid`, `auth.provider`, `auth.token`.
        case user
    }

    public let kind: Kind
    /// `auth.uid`: the token's `sub` (empty for admin).
    public let uid: String
    /// `auth.provider`: the token's `provider` claim, else `"custom"`.
    public let provider: String
    /// `auth.token`: every verified claim, as a JSON object (nested objects kept).
    public let claims: JSONValue
    /// When the identity stops being valid (the token's `exp`, ms since the epoch); nil never.
    public let expiresAt: Int64?

    /// An end user identified by a verified token.
    public init(uid: String, provider: String, claims: JSONValue, expiresAt: Int64?) {
        self.kind = .user
        self.uid = uid
        self.provider = provider
        self.claims = claims
        self.expiresAt = expiresAt
    }

    private init(admin: Void) {
        kind = .admin
        uid = ""
        provider = "admin"
        claims = .object([])
        expiresAt = nil
    }

    /// An admin connection (authenticated with an admin secret).
    public static let admin = AuthContext(admin: ())

    public var isAdmin: Bool { kind == .admin }
}
