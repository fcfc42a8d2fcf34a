import ExtrasBase64
public import HearthCore
public import HearthJSON
public import JWTKit

/// Mints HS256 tokens for development and scripts (`hearth token`, tests): the claims are
/// ours, the signature is jwt-kit's.
public struct TokenMinter: Sendable {
    private let signer: any JWTAlgorithm

    /// A minter for tokens signed with the HS256 `secret` (the server's `jwtSecret`).
    public init(secret: String) async throws(DatabaseError) {
        self.signer = try await VerificationKey.hmacAlgorithm(secret: secret)
    }

    /// A token for `uid` valid from `now` (seconds since the epoch) for `ttlSeconds`, with extra
    /// `claims` (a JSON object; `sub`, `iat` and `exp` are set here).
    public func mint(
        uid: String, claims: JSONValue = .object([]), now: Int64, ttlSeconds: Int64
    ) throws(DatabaseError)
        -> String
    {
        guard !uid.isEmpty else { throw DatabaseError(.badRequest, "the uid must not be empty") }
        guard case .object(let extra) = claims else { throw DatabaseError(.badRequest, "claims must be a JSON object") }
        var members = extra.filter { !["sub", "iat", "exp"].contains($0.key) }
        members.insert(contentsOf: [JSONMember("sub", .string(uid)), JSONMember("iat", .int(now))], at: 0)
        members.append(JSONMember("exp", .int(now + ttlSeconds)))
        return try Self.sign(
            header: .object(["alg": .string("HS256"), "typ": .string("JWT")]), claims: .object(members), with: signer)
    }

    /// `base64url(header).base64url(claims).base64url(signature)`, signed by `algorithm`.
    public static func sign(
        header: JWTValueHeader, claims: JSONValue, with algorithm: any JWTAlgorithm
    ) throws(DatabaseError)
        -> String
    {
        let encode = { (bytes: [UInt8]) in
            Base64.encodeToString(bytes: bytes, options: [.base64UrlAlphabet, .omitPaddingCharacter])
        }
        let message = encode(Array(header.jsonString.utf8)) + "." + encode(Array(claims.jsonString.utf8))
        do {
            return message + "." + encode(try algorithm.sign(Array(message.utf8)))
        } catch {
            throw DatabaseError(.internal, "signing failed: \(error)")
        }
    }
}

/// A JWT header as plain JSON.
public typealias JWTValueHeader = JSONValue
