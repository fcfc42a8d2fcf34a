import HearthCore
import HearthJSON
import JWTKit

/// One configured JWT key: its algorithm name, optional key id, and jwt-kit's verifier for it.
/// Every signature check is jwt-kit's (`JWTAlgorithm.verify`), never ours.
struct VerificationKey: Sendable {
    let algorithm: String
    let kid: String?
    let verifier: any JWTAlgorithm

    func verifies(_ signature: [UInt8], signs message: ArraySlice<UInt8>) -> Bool {
        (try? verifier.verify(signature, signs: message)) ?? false
    }

    static func hmac(secret: String) async throws(DatabaseError) -> VerificationKey {
        VerificationKey(algorithm: "HS256", kid: nil, verifier: try await hmacAlgorithm(secret: secret))
    }

    /// jwt-kit's HS256 algorithm for `secret` (at least 32 bytes: the size of the hash, as
    /// RFC 7518 §3.2 requires).
    static func hmacAlgorithm(secret: String) async throws(DatabaseError) -> any JWTAlgorithm {
        guard secret.utf8.count >= 32 else {
            throw DatabaseError(.badRequest, "the HS256 secret (jwtSecret) must be at least 32 bytes long")
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "hs256")
        do {
            return try await keys.getKey(for: "hs256")
        } catch {
            throw DatabaseError(.internal, "jwt-kit did not hand back the HS256 key: \(error)")
        }
    }

    /// The keys in one file: a PEM public key (RSA → RS256, P-256 → ES256) or a JWKS document.
    static func load(_ text: String, file: String, index: Int) async throws(DatabaseError) -> [VerificationKey] {
        let keys = JWTKeyCollection()
        let trimmed = text.drop { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
        do {
            if trimmed.hasPrefix("{") {
                return try await jwks(String(trimmed), into: keys)
            }
            let kid = JWKIdentifier(string: "pem-\(index)")
            if let rsa = try? Insecure.RSA.PublicKey(pem: text) {
                await keys.add(rsa: rsa, digestAlgorithm: .sha256, kid: kid)
                return [VerificationKey(algorithm: "RS256", kid: nil, verifier: try await keys.getKey(for: kid))]
            }
            if let ec = try? ES256PublicKey(pem: text) {
                await keys.add(ecdsa: ec, kid: kid)
                return [VerificationKey(algorithm: "ES256", kid: nil, verifier: try await keys.getKey(for: kid))]
            }
        } catch let error as DatabaseError {
            throw error
        } catch {
            throw DatabaseError(.badRequest, "JWT key file \(file): \(error)")
        }
        throw DatabaseError(
            .badRequest, "JWT key file \(file) holds neither an RSA or P-256 public key (PEM) nor a JWKS document")
    }

    /// Every RS256/ES256 key of a JWKS document, by its `kid`.
    static func jwks(_ text: String, into keys: JWTKeyCollection) async throws -> [VerificationKey] {
        try await keys.add(jwksJSON: text)
        let document = try Array(text.utf8).withUnsafeBytes { try JSONParser.parse($0) }
        guard case .array(let entries)? = document["keys"] else {
            throw DatabaseError(.badRequest, "a JWKS document needs a \"keys\" array")
        }
        var result: [VerificationKey] = []
        for entry in entries {
            guard let kid = entry["kid"]?.stringValue else { continue }
            let algorithm: String
            switch (entry["kty"]?.stringValue, entry["alg"]?.stringValue) {
            case (_, "RS256"?), ("RSA"?, nil): algorithm = "RS256"
            case (_, "ES256"?), ("EC"?, nil): algorithm = "ES256"
            default: continue
            }
            let verifier = try await keys.getKey(for: JWKIdentifier(string: kid), alg: algorithm)
            result.append(VerificationKey(algorithm: algorithm, kid: kid, verifier: verifier))
        }
        return result
    }
}
