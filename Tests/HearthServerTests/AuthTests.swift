import Foundation
import HearthAuth
import HearthJSON
import HearthServer
import HearthTestSupport
import JWTKit
import XCTest

/// `auth` / `unauth` against the real server (docs/security.md, "Identity"): admin secrets, every way a JWT
/// can be refused, RS256 and ES256 keys from PEM and JWKS files, expiry mid-connection.
final class AuthTests: XCTestCase {
    let rules =
        #"{"rules":{"users":{"$uid":{".read":"auth != null && auth.uid == $uid",".write":"auth.uid == $uid"}}}}"#

    func testAdminSecretAndWrongSecret() async throws {
        let rulesFile = try temporaryFile(rules)
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try TestClient(port: server.port)
            let wrong = try client.request(#"{"op":"auth","token":"not-the-secret"}"#)
            XCTAssertEqual(wrong.errorCode, "invalid_token")
            XCTAssertFalse(wrong.jsonString.contains(TestSecrets.admin))
            XCTAssertEqual(try client.request(#"{"op":"set","path":"/x","value":1}"#).errorCode, "permission_denied")
            let ok = try client.request(#"{"op":"auth","token":"\#(TestSecrets.admin)"}"#)
            XCTAssertEqual(ok["auth"], json(#"{"admin":true}"#))
            // Admin bypasses the rules.
            XCTAssertEqual(try client.request(#"{"op":"set","path":"/x","value":1}"#)["ok"], .bool(true))
            XCTAssertEqual(try client.request(#"{"op":"unauth"}"#)["auth"], .null)
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/x"}"#).errorCode, "permission_denied")
        }
    }

    func testEveryTokenFailureIsInvalidTokenWithItsReason() async throws {
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.audience = "my-app"
                $0.tokens.issuer = "https://issuer.example"
            }
        ) { server in
            let now = clock.now / 1000
            let hs = try await hmacSigner(TestSecrets.jwt)
            let good: JSONValue = .object([
                "sub": "alice", "aud": "my-app", "iss": "https://issuer.example", "iat": .int(now),
                "exp": .int(now + 600),
            ])
            func with(_ changes: KeyValuePairs<String, JSONValue>) -> JSONValue {
                var members = good.objectMembers ?? []
                for (key, value) in changes {
                    members.removeAll { $0.key == key }
                    if value != .null { members.append(JSONMember(key, value)) }
                }
                return .object(members)
            }
            let header: JSONValue = .object(["alg": "HS256", "typ": "JWT"])
            let cases: [(String, String)] = [
                ("expired", try TokenMinter.sign(header: header, claims: with(["exp": .int(now - 3600)]), with: hs)),
                (
                    "not valid yet",
                    try TokenMinter.sign(header: header, claims: with(["nbf": .int(now + 3600)]), with: hs)
                ),
                (
                    "bad signature",
                    try TokenMinter.sign(
                        header: header, claims: good, with: try await hmacSigner("another-secret-of-at-least-32-bytes"))
                ),
                ("alg \"none\"", unsigned(header: .object(["alg": "none"]), claims: good)),
                (
                    "algorithm RS256 is not accepted",
                    try TokenMinter.sign(header: .object(["alg": "RS256"]), claims: good, with: hs)
                ),
                ("wrong audience", try TokenMinter.sign(header: header, claims: with(["aud": "other-app"]), with: hs)),
                ("wrong issuer", try TokenMinter.sign(header: header, claims: with(["iss": "https://evil"]), with: hs)),
                ("no \"sub\"", try TokenMinter.sign(header: header, claims: with(["sub": .null]), with: hs)),
                ("no \"exp\"", try TokenMinter.sign(header: header, claims: with(["exp": .null]), with: hs)),
                ("not a JWT", "garbage"),
                ("the header is not JSON", "bm90IGpzb24.e30.c2ln"),
            ]
            let client = try TestClient(port: server.port)
            for (reason, token) in cases {
                let response = try client.request(.object(["op": "auth", "token": .string(token)]))
                XCTAssertEqual(response.errorCode, "invalid_token", reason)
                let message = response["error"]?["message"]?.stringValue ?? ""
                XCTAssert(message.contains(reason), "\(reason): \(message)")
            }
            // The connection is still unauthenticated, and a good token works.
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/users/alice"}"#).errorCode, "permission_denied")
            let ok = try client.request(
                .object(["op": "auth", "token": .string(try TokenMinter.sign(header: header, claims: good, with: hs))]))
            XCTAssertEqual(ok["auth"]?["uid"], .string("alice"))
            XCTAssertEqual(ok["auth"]?["provider"], .string("custom"))
            XCTAssertEqual(ok["auth"]?["token"]?["aud"], .string("my-app"))
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/users/alice"}"#)["ok"], .bool(true))
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/users/bob"}"#).errorCode, "permission_denied")
            // A JWT claiming admin is not admin.
            let claimsAdmin = try TokenMinter.sign(header: header, claims: with(["admin": .bool(true)]), with: hs)
            XCTAssertNotEqual(
                try client.request(.object(["op": "auth", "token": .string(claimsAdmin)]))["auth"]?["admin"],
                .bool(true))
            XCTAssertEqual(
                try client.request(#"{"op":"set","path":"/users/bob","value":1}"#).errorCode, "permission_denied")
        }
    }

    func testRS256AndES256KeysFromPEMAndJWKSFiles() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hearth-keys-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try openssl(["genrsa", "-out", "\(directory)/rsa.pem", "2048"])
        try openssl(["rsa", "-in", "\(directory)/rsa.pem", "-pubout", "-out", "\(directory)/rsa.pub"])
        try openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "\(directory)/ec.pem"])
        try openssl(["ec", "-in", "\(directory)/ec.pem", "-pubout", "-out", "\(directory)/ec.pub"])
        let rsaPrivate = try Insecure.RSA.PrivateKey(
            pem: String(contentsOfFile: "\(directory)/rsa.pem", encoding: .utf8))
        let ecPrivate = try ES256PrivateKey(pem: String(contentsOfFile: "\(directory)/ec.pem", encoding: .utf8))
        let keys = JWTKeyCollection()
        await keys.add(rsa: rsaPrivate, digestAlgorithm: .sha256, kid: "r")
        await keys.add(ecdsa: ecPrivate, kid: "e")
        let rsaSigner = try await keys.getKey(for: "r")
        let ecSigner = try await keys.getKey(for: "e")
        // The same RSA key again, as a JWKS document with a kid (modulus from openssl).
        let n = try rsaModulusForJWK(keyFile: "\(directory)/rsa.pub", isPublic: true)
        let jwks = #"{"keys":[{"kty":"RSA","alg":"RS256","kid":"jwks-1","n":"\#(n)","e":"AQAB"}]}"#
        try jwks.write(toFile: "\(directory)/keys.jwks", atomically: true, encoding: .utf8)

        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.jwtPublicKeyFiles = ["\(directory)/rsa.pub", "\(directory)/ec.pub", "\(directory)/keys.jwks"]
            }
        ) { server in
            let now = clock.now / 1000
            let claims: JSONValue = .object(["sub": "carol", "exp": .int(now + 600), "provider": "password"])
            let client = try TestClient(port: server.port)
            for (alg, signer, kid) in [
                ("RS256", rsaSigner, nil), ("ES256", ecSigner, nil), ("RS256", rsaSigner, "jwks-1"),
            ] {
                var header: [JSONMember] = [JSONMember("alg", .string(alg))]
                if let kid { header.append(JSONMember("kid", .string(kid))) }
                let token = try TokenMinter.sign(header: .object(header), claims: claims, with: signer)
                let response = try client.request(.object(["op": "auth", "token": .string(token)]))
                XCTAssertEqual(response["auth"]?["uid"], .string("carol"), "\(alg) \(kid ?? ""): \(response)")
                XCTAssertEqual(response["auth"]?["provider"], .string("password"))
                // A token signed with the EC key but labelled RS256 fails.
                let forged = try TokenMinter.sign(header: .object(["alg": "RS256"]), claims: claims, with: ecSigner)
                XCTAssertEqual(
                    try client.request(.object(["op": "auth", "token": .string(forged)])).errorCode, "invalid_token")
            }
        }
    }

    func testExpiryMidConnectionRevokesTheIdentityAndCancelsItsSubscriptions() async throws {
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.clockSkewSeconds = 0
            }
        ) {
            server in
            let client = try TestClient(port: server.port)
            // Valid for about one more second.
            let token = try await testToken(uid: "alice", now: clock.now, ttlSeconds: 1)
            XCTAssertEqual(try client.request(.object(["op": "auth", "token": .string(token)]))["ok"], .bool(true))
            let sub = try client.request(#"{"op":"subscribe","path":"/users/alice"}"#)["sub"]
            XCTAssertNotNil(sub)
            clock.now += 3000
            var revoked = false
            var cancelled = false
            let deadline = Date().addingTimeInterval(10)
            while !(revoked && cancelled), Date() < deadline {
                let line = try client.readJSON(timeout: 10)
                if line["event"] == .string("auth_revoked") {
                    XCTAssertEqual(line["reason"], .string("expired"))
                    revoked = true
                }
                if line["event"] == .string("cancel") {
                    XCTAssertEqual(line["sub"], sub)
                    XCTAssertEqual(line.errorCode, "permission_denied")
                    cancelled = true
                }
            }
            XCTAssert(revoked && cancelled)
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/users/alice"}"#).errorCode, "permission_denied")
        }
    }

    /// RFC 7515 §4.1.11: a JWT whose header has `crit` names extensions that must be understood;
    /// this server understands none, so such a token is refused even with a good signature, on
    /// both protocols, while the same claims without `crit` are accepted.
    func testTokenWithCritHeaderIsRefused() async throws {
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(clock: clock, secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let now = clock.now / 1000
            let hs = try await hmacSigner(TestSecrets.jwt)
            let claims: JSONValue = .object(["sub": "alice", "iat": .int(now), "exp": .int(now + 600)])
            let critical = [
                try TokenMinter.sign(
                    header: .object(["alg": "HS256", "typ": "JWT", "crit": .array(["exp"])]), claims: claims, with: hs),
                try TokenMinter.sign(
                    header: .object(["alg": "HS256", "crit": .array(["b64"]), "b64": .bool(false)]), claims: claims,
                    with: hs),
                try TokenMinter.sign(header: .object(["alg": "HS256", "crit": .array([])]), claims: claims, with: hs),
                try TokenMinter.sign(header: .object(["alg": "HS256", "crit": "exp"]), claims: claims, with: hs),
            ]
            let client = try TestClient(port: server.port)
            let http = try HTTPTestClient(port: server.httpPort ?? 0)
            for token in critical {
                let response = try client.request(.object(["op": "auth", "token": .string(token)]))
                XCTAssertEqual(response.errorCode, "invalid_token", "\(response)")
                let message = response["error"]?["message"]?.stringValue ?? ""
                XCTAssert(message.contains("\"crit\""), message)
                XCTAssertEqual(try http.request("GET", "/users/alice.json?auth=\(token)").status, 401)
            }
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/users/alice"}"#).errorCode, "permission_denied")
            let plain = try TokenMinter.sign(header: .object(["alg": "HS256", "typ": "JWT"]), claims: claims, with: hs)
            XCTAssertEqual(
                try client.request(.object(["op": "auth", "token": .string(plain)]))["auth"]?["uid"], .string("alice"))
            XCTAssertEqual(try http.request("GET", "/users/alice.json?auth=\(plain)").status, 200)
        }
    }

    func testOpenModeAcceptsAndIgnoresCredentials() async throws {
        try await withSecureServer { server in
            let client = try TestClient(port: server.port)
            let response = try client.request(#"{"op":"auth","token":"owner"}"#)
            XCTAssertEqual(response["ok"], .bool(true))
            XCTAssertNotNil(response["warning"])
            XCTAssertEqual(try client.request(#"{"op":"set","path":"/a","value":1}"#)["ok"], .bool(true))
        }
    }

    func testRefusesToStartOpenOnAReachableAddress() async throws {
        var configuration = ServerConfiguration()
        configuration.host = "0.0.0.0"
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        do {
            _ = try await HearthServer.start(configuration: configuration, logger: quietLogger)
            XCTFail("started open on 0.0.0.0")
        } catch let error as ConfigurationError {
            XCTAssert(error.message.contains("rules file") && error.message.contains("--insecure-open"), error.message)
        }
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: configuration.dataDirectory), "refused before touching data")
        // With insecureOpen the mode check passes; the bind then fails on an address this
        // machine does not have (TEST-NET-1), so nothing listens beyond loopback.
        configuration.host = "192.0.2.1"
        configuration.insecureOpen = true
        do {
            let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
            await server.shutdown()
        } catch {
            XCTAssertFalse(error is ConfigurationError, "\(error)")
        }
    }

    private func hmacSigner(_ secret: String) async throws -> any JWTAlgorithm {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "k")
        return try await keys.getKey(for: "k")
    }

    private func unsigned(header: JSONValue, claims: JSONValue) -> String {
        func b64(_ value: JSONValue) -> String {
            Data(value.jsonString.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return b64(header) + "." + b64(claims) + "."
    }
}
