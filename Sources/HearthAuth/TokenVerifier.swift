import ExtrasBase64
public import HearthCore
import HearthJSON
import JWTKit

/// Turns the token of an `auth` request into an identity (docs/security.md, "Identity"): an admin secret
/// (compared in constant time) or a JWT whose signature jwt-kit verifies with a configured key
/// (HS256, RS256, ES256; `none` and unconfigured algorithms refused) and whose claims pass the
/// time, subject, audience and issuer checks, or for a Firebase Auth ID token those of
/// `firebaseProjectId` (docs/security.md, "Firebase Auth").
///
/// Immutable and synchronous, so a connection verifies on its own I/O thread; a reload builds a
/// new verifier (`TokenVerifier.load`).
public struct TokenVerifier: Sendable {
    /// How a verifier is configured.
    public struct Settings: Sendable, Equatable {
        /// Tokens that make a connection admin. Never logged.
        public var adminSecrets: [String] = []
        /// The HS256 shared secret.
        public var jwtSecret: String?
        /// PEM public keys (RSA or P-256) or JWKS files, by path.
        public var jwtPublicKeyFiles: [String] = []
        /// Required `aud` (when set).
        public var audience: String?
        /// Required `iss` (when set).
        public var issuer: String?
        /// Tolerance for `exp`, `nbf` and `iat`.
        public var clockSkewSeconds = 60
        /// Treat the Firebase emulator's `owner` token as admin (local test setups only).
        public var emulatorOwnerIsAdmin = false
        /// The Firebase project whose Auth ID tokens are accepted (`firebaseProjectId`): a token
        /// whose `iss` is securetoken's must be RS256 and name this project in `iss` and `aud`.
        public var firebaseProjectId: String?
        /// A JWKS document's URL (`jwtPublicKeysURL`); the server fetches it and refreshes it.
        public var jwtPublicKeysURL: String?
        /// PEM file of the certificate authorities trusted for an https `jwtPublicKeysURL`
        /// instead of the system's (`jwtPublicKeysCAFile`).
        public var jwtPublicKeysCAFile: String?

        public init() {}
    }

    private let adminSecrets: [[UInt8]]
    /// The keys of the settings' secret and files.
    private let ownKeys: [VerificationKey]
    /// The keys fetched from `jwtPublicKeysURL`.
    public let fetchedKeys: FetchedKeys
    /// `ownKeys` and `fetchedKeys` together.
    private let keys: [VerificationKey]
    /// Told when a token names a `kid` no key has (the fetched keys may be out of date).
    private let onUnknownKid: (@Sendable () -> Void)?
    private let settings: Settings

    /// The `iss` of every Firebase Auth ID token, followed by the project id.
    public static let firebaseIssuerPrefix = "https://securetoken.google.com/"

    /// The algorithms this verifier accepts (`HS256`, `RS256`, `ES256`).
    public var algorithms: Set<String> { Set(keys.map(\.algorithm)) }

    /// Reads the keys the settings name. Throws `DatabaseError(.badRequest…)` naming the file
    /// that cannot be read or parsed.
    public static func load(
        _ settings: Settings, readFile: (String) throws -> String
    ) async throws(DatabaseError) -> TokenVerifier {
        if settings.firebaseProjectId != nil, settings.jwtPublicKeyFiles.isEmpty, settings.jwtPublicKeysURL == nil {
            throw DatabaseError(
                .badRequest,
                "firebaseProjectId needs the keys Firebase Auth signs with: set jwtPublicKeysURL to https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com (or jwtPublicKeys to a copy of that JWKS document)"
            )
        }
        var keys: [VerificationKey] = []
        if let secret = settings.jwtSecret, !secret.isEmpty {
            keys.append(try await VerificationKey.hmac(secret: secret))
        }
        for (index, path) in settings.jwtPublicKeyFiles.enumerated() {
            let text: String
            do { text = try readFile(path) } catch {
                throw DatabaseError(.badRequest, "cannot read the JWT key file \(path): \(error)")
            }
            keys.append(contentsOf: try await VerificationKey.load(text, file: path, index: index))
        }
        return TokenVerifier(settings: settings, keys: keys)
    }

    init(
        settings: Settings, keys: [VerificationKey], fetchedKeys: FetchedKeys = .none,
        onUnknownKid: (@Sendable () -> Void)? = nil
    ) {
        self.settings = settings
        self.ownKeys = keys
        self.fetchedKeys = fetchedKeys
        self.keys = keys + fetchedKeys.keys
        self.onUnknownKid = onUnknownKid
        self.adminSecrets = settings.adminSecrets.filter { !$0.isEmpty }.map { Array($0.utf8) }
    }

    /// This verifier with `fetchedKeys` in place of the fetched keys it had; `onUnknownKid` is
    /// called (on the verifying thread, so it must return at once) when a token names a `kid`
    /// that no key has.
    public func replacingFetchedKeys(
        _ fetchedKeys: FetchedKeys, onUnknownKid: (@Sendable () -> Void)?
    ) -> TokenVerifier {
        TokenVerifier(settings: settings, keys: ownKeys, fetchedKeys: fetchedKeys, onUnknownKid: onUnknownKid)
    }

    /// This verifier with the fetched keys of `other` (a verifier built anew keeps what was fetched).
    public func keepingFetchedKeys(of other: TokenVerifier) -> TokenVerifier {
        replacingFetchedKeys(other.fetchedKeys, onUnknownKid: other.onUnknownKid)
    }

    /// Verifies `token` at time `now` (ms since the epoch). The error is `invalid_token` with the
    /// reason (expired, bad signature, wrong audience…), never with the token or a secret.
    public func verify(_ token: String, now: Int64) -> Result<AuthContext, DatabaseError> {
        let bytes = Array(token.utf8)
        // Every admin secret is compared, whatever matched, so timing tells nothing.
        var isAdmin = false
        for secret in adminSecrets where ConstantTime.equals(bytes, secret) { isAdmin = true }
        if isAdmin || (settings.emulatorOwnerIsAdmin && token == "owner") { return .success(.admin) }
        do {
            return .success(try verifyJWT(bytes, now: now))
        } catch {
            return .failure(error)
        }
    }

    /// The shortest admin secret that counts as impossible to guess online: the size the HS256
    /// key must have too (RFC 7518 §3.2).
    public static let unguessableSecretBytes = 32

    /// Verifies `token` only when it is a credential nobody can find by trying: a JWT (its
    /// signature must verify with a configured key, and every HS256 key has at least 32 bytes)
    /// or an admin secret of at least `unguessableSecretBytes` bytes. Anything else fails without
    /// being compared with the shorter admin secrets or taken as the emulator's `owner`, so the
    /// answer says nothing about them. For a sender throttled for failed attempts: the throttle
    /// protects what can be guessed, and need not lock out what cannot.
    public func verifyUnguessable(_ token: String, now: Int64) -> Result<AuthContext, DatabaseError> {
        let bytes = Array(token.utf8)
        var isAdmin = false
        for secret in adminSecrets where secret.count >= Self.unguessableSecretBytes {
            if ConstantTime.equals(bytes, secret) { isAdmin = true }
        }
        if isAdmin { return .success(.admin) }
        do {
            return .success(try verifyJWT(bytes, now: now))
        } catch {
            return .failure(error)
        }
    }

    private func verifyJWT(_ bytes: [UInt8], now: Int64) throws(DatabaseError) -> AuthContext {
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw Self.invalid("not a JWT or an admin secret")
        }
        let header = try Self.decodeObject(parts[0], what: "header")
        guard case .string(let algorithm)? = header["alg"] else { throw Self.invalid("the header has no \"alg\"") }
        if algorithm.lowercased() == "none" { throw Self.invalid("unsigned tokens (alg \"none\") are refused") }
        // RFC 7515 §4.1.11: the extensions a "crit" header names must be understood, and this
        // verifier understands none, so any "crit" refuses the token. The names are not echoed:
        // they are the caller's text, and the reason is logged.
        if header["crit"] != nil {
            throw Self.invalid("the header's \"crit\" names extensions this server does not support")
        }
        let candidates = keys.filter { $0.algorithm == algorithm }
        guard !candidates.isEmpty else {
            let accepted = algorithms.sorted().joined(separator: ", ")
            throw Self.invalid(
                "algorithm \(algorithm) is not accepted"
                    + (accepted.isEmpty ? " (no JWT keys are configured)" : " (accepted: \(accepted))"))
        }
        let kid = header["kid"]?.stringValue
        let signature: [UInt8]
        do {
            signature = try Base64.decode(bytes: parts[2], options: [.base64UrlAlphabet, .omitPaddingCharacter])
        } catch {
            throw Self.invalid("the signature is not base64url")
        }
        let signed = bytes[..<(parts[1].endIndex)]
        let matching = candidates.filter { key in kid == nil || key.kid == nil || key.kid == kid }
        guard matching.contains(where: { $0.verifies(signature, signs: signed) }) else {
            if let kid, !candidates.contains(where: { $0.kid == kid }) {
                onUnknownKid?()
                throw Self.invalid("unknown key id (kid)")
            }
            throw Self.invalid("bad signature")
        }
        let claims = try Self.decodeObject(parts[1], what: "payload")
        return try checkClaims(claims, algorithm: algorithm, now: now)
    }

    private func checkClaims(_ claims: JSONValue, algorithm: String, now: Int64) throws(DatabaseError) -> AuthContext {
        let skew = Int64(settings.clockSkewSeconds) * 1000
        guard let exp = Self.seconds(claims["exp"]) else { throw Self.invalid("the token has no \"exp\" claim") }
        let expiresAt = exp * 1000
        if now > expiresAt + skew { throw Self.invalid("expired") }
        if let nbf = Self.seconds(claims["nbf"]), now + skew < nbf * 1000 { throw Self.invalid("not valid yet (nbf)") }
        if let iat = Self.seconds(claims["iat"]), now + skew < iat * 1000 {
            throw Self.invalid("issued in the future (iat)")
        }
        guard case .string(let sub)? = claims["sub"], !sub.isEmpty else {
            throw Self.invalid("the token has no \"sub\" claim")
        }
        guard sub.utf8.count <= 128 else { throw Self.invalid("\"sub\" is longer than 128 bytes") }
        if let project = settings.firebaseProjectId, case .string(let iss)? = claims["iss"],
            iss.hasPrefix(Self.firebaseIssuerPrefix)
        {
            try Self.checkFirebaseClaims(claims, iss: iss, project: project, algorithm: algorithm, now: now, skew: skew)
        } else {
            try checkAudienceAndIssuer(claims)
        }
        // `auth.provider`: the `provider` claim, else Firebase's sign-in provider.
        let provider =
            claims["provider"]?.stringValue ?? claims["firebase"]?["sign_in_provider"]?.stringValue ?? "custom"
        return AuthContext(uid: sub, provider: provider, claims: claims, expiresAt: expiresAt + skew)
    }

    /// A Firebase Auth ID token (its `iss` is securetoken's, with `firebaseProjectId` set): RS256,
    /// this project's issuer and audience, and an `auth_time` in the past. `jwtAudience` and
    /// `jwtIssuer` are for the other tokens.
    private static func checkFirebaseClaims(
        _ claims: JSONValue, iss: String, project: String, algorithm: String, now: Int64, skew: Int64
    ) throws(DatabaseError) {
        guard algorithm == "RS256" else { throw invalid("a Firebase ID token must be signed with RS256") }
        guard iss == firebaseIssuerPrefix + project else {
            throw invalid("wrong issuer (iss): not Firebase project \(project)'s")
        }
        guard case .string(let aud)? = claims["aud"], aud == project else {
            throw invalid("wrong audience (aud): not Firebase project \(project)")
        }
        if let authTime = seconds(claims["auth_time"]), now + skew < authTime * 1000 {
            throw invalid("signed in in the future (auth_time)")
        }
    }

    /// `jwtAudience` and `jwtIssuer`, when set.
    private func checkAudienceAndIssuer(_ claims: JSONValue) throws(DatabaseError) {
        if let audience = settings.audience {
            let accepted: Bool
            switch claims["aud"] {
            case .string(let aud)?: accepted = aud == audience
            case .array(let items)?: accepted = items.contains(.string(audience))
            default: accepted = false
            }
            guard accepted else { throw Self.invalid("wrong audience (aud)") }
        }
        if let issuer = settings.issuer {
            guard case .string(let iss)? = claims["iss"], iss == issuer else {
                throw Self.invalid("wrong issuer (iss)")
            }
        }
    }

    /// A NumericDate claim in whole seconds (fractions dropped); nil when absent or not a number.
    private static func seconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .int(let v)?: return v
        case .double(let v)? where v.isFinite && abs(v) < 1e15: return Int64(v)
        default: return nil
        }
    }

    private static func decodeObject(_ part: ArraySlice<UInt8>, what: String) throws(DatabaseError) -> JSONValue {
        let json: [UInt8]
        do {
            json = try Base64.decode(bytes: part, options: [.base64UrlAlphabet, .omitPaddingCharacter])
        } catch {
            throw invalid("the \(what) is not base64url")
        }
        let value: JSONValue
        do {
            value = try json.withUnsafeBytes { buffer in try JSONParser.parse(buffer) }
        } catch {
            throw invalid("the \(what) is not JSON")
        }
        guard case .object = value else { throw invalid("the \(what) is not a JSON object") }
        return value
    }

    static func invalid(_ reason: String) -> DatabaseError {
        DatabaseError(.invalidToken, "invalid token: \(reason)")
    }
}
