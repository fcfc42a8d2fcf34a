public import HearthJSON

/// Who a connection is after `Database.auth(token:)`: an admin (an admin secret) or a user (a
/// verified JWT), as the server's `auth` response describes it.
public struct AuthIdentity: Sendable, Equatable {
    /// The user's id (the token's `sub`); nil for an admin.
    public let uid: String?
    /// True when the token was one of the server's admin secrets: the rules do not apply.
    public let isAdmin: Bool
    /// The token's `provider` claim, else `"custom"`; nil for an admin.
    public let provider: String?
    /// Every claim of the token (`auth.token` in rules); an empty object for an admin.
    public let claims: JSONValue
    /// When the identity ends (ms since the epoch): the token's `exp` plus the server's clock
    /// skew. The server then sends `auth_revoked` and the client asks its `tokenProvider` again.
    public let expires: Int64?

    /// The identity of an `auth` response's `auth` member; nil for `null` (an open server that
    /// ignored the token).
    init?(wire: JSONValue) {
        guard case .object = wire else { return nil }
        isAdmin = wire["admin"]?.boolValue == true
        uid = wire["uid"]?.stringValue
        provider = wire["provider"]?.stringValue
        claims = wire["token"] ?? .object([])
        expires = wire["expires"]?.int64Value
    }
}
