public import HearthCore
import JWTKit

/// The keys of a JWKS document fetched from a URL (`jwtPublicKeysURL`, docs/security.md,
/// "Firebase Auth"): parsed here, fetched and refreshed by the server, and handed to a
/// `TokenVerifier` beside the keys of its own files.
public struct FetchedKeys: Sendable {
    let keys: [VerificationKey]

    /// No fetched keys.
    public static let none = FetchedKeys(keys: [])

    /// The key ids, in the document's order.
    public var kids: [String] { keys.compactMap(\.kid) }

    /// The RS256/ES256 keys (with a `kid`) of the JWKS document `text`. Throws
    /// `DatabaseError(.badRequest…)` naming `source` when it is not a JWKS document or holds no
    /// such key.
    public static func parse(jwks text: String, source: String) async throws(DatabaseError) -> FetchedKeys {
        let keys: [VerificationKey]
        do {
            keys = try await VerificationKey.jwks(text, into: JWTKeyCollection())
        } catch let error as DatabaseError {
            throw DatabaseError(.badRequest, "\(source): \(error.message)")
        } catch {
            throw DatabaseError(.badRequest, "\(source): not a usable JWKS document: \(error)")
        }
        guard !keys.isEmpty else {
            throw DatabaseError(.badRequest, "\(source): the JWKS document holds no RS256 or ES256 key with a \"kid\"")
        }
        return FetchedKeys(keys: keys)
    }
}
