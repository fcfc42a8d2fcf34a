import Foundation
import HearthAuth
import HearthJSON
import HearthTestSupport
import JWTKit
import XCTest

/// Limits an attacker steps around or turns against others, and what TLS and tokens accept
/// (docs/security.md, docs/REST.md).
final class AttackLimitsTests: XCTestCase {
    /// Guessing from one address is throttled, but a valid token or an admin secret too long to
    /// guess from that address (behind a proxy or NAT, everyone's) still works; a short admin
    /// secret, which could be a lucky guess, waits with the guesses (docs/security.md,
    /// "Throttling failed attempts").
    func testAThrottledAddressStillAcceptsValidCredentials() async throws {
        let strongSecret = "an-admin-secret-far-too-long-to-guess-0123456789"
        let token = try await testToken(uid: "alice", now: Int64(Date().timeIntervalSince1970 * 1000))
        let rules = try temporaryFile(#"{"rules":{".read":"auth != null",".write":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let server = try AttackServer.start([
            ("rulesFile", .string(rules)),
            ("adminSecrets", .array([.string(TestSecrets.admin), .string(strongSecret)])),
            ("jwtSecret", .string(TestSecrets.jwt)), ("maxFailedAuthPerMinute", .int(3)),
        ])
        defer { server.stop() }
        let connection = try RawConnection(port: server.httpPort)
        var statuses: [Int] = []
        for guess in 0..<10 {
            statuses.append(try connection.request("GET", "/x.json?auth=guess-\(guess)").status)
        }
        XCTAssertTrue(statuses.contains(429), "guessing was never throttled: \(statuses)")
        XCTAssertEqual(try connection.request("GET", "/x.json?auth=\(token)").status, 200, "a valid token")
        XCTAssertEqual(
            try connection.request("GET", "/x.json?auth=\(strongSecret)").status, 200, "a strong admin secret")
        XCTAssertEqual(
            try connection.request("GET", "/x.json?auth=\(TestSecrets.admin)").status, 429, "a short admin secret")
    }

    /// The connection limit's 429 says when to come back (docs/REST.md); loopback is exempt from the
    /// per-address limit, so the total limit is used here.
    func testTheConnectionLimitAnswersWithRetryAfter() throws {
        let server = try AttackServer.start([("maxConnections", .int(2))])
        defer { server.stop() }
        let held = try (0..<2).map { _ in try RawConnection(port: server.httpPort) }
        for connection in held { XCTAssertEqual(try connection.request("GET", "/x.json").status, 200) }
        let refused = try RawConnection(port: server.httpPort).request("GET", "/x.json")
        XCTAssertEqual(refused.status, 429)
        XCTAssertNotNil(refused.header("Retry-After"), "a 429 without Retry-After: \(refused.headers)")
    }

    /// TLS 1.2 only with forward-secret AEAD suites: no RSA key exchange, no CBC with SHA-1.
    func testTLS12OffersOnlyForwardSecretAEADSuites() throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let server = try AttackServer.start([
            ("tlsCertificate", .string(pki.path("server.crt"))), ("tlsKey", .string(pki.path("server.key"))),
        ])
        defer { server.stop() }
        for port in [server.tcpPort, server.httpPort] {
            XCTAssertTrue(
                Self.handshakes(port: port, cipher: "ECDHE-RSA-AES128-GCM-SHA256", ca: pki.path("ca.crt")),
                "the forward-secret AEAD suite on port \(port)")
            for weak in ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA"] {
                XCTAssertFalse(
                    Self.handshakes(port: port, cipher: weak, ca: pki.path("ca.crt")),
                    "TLS 1.2 with \(weak) on port \(port)")
            }
        }
    }

    /// Whether `openssl s_client` completes a TLS 1.2 handshake offering only `cipher`.
    private static func handshakes(port: Int, cipher: String, ca: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-cipher", "\(cipher):@SECLEVEL=0", "-CAfile", ca,
            "-verify_return_error",
        ]
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        let killer = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 5, execute: killer)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        killer.cancel()
        return text.contains("Cipher is \(cipher)")
    }

    /// A token whose `crit` header names an extension the server does not understand is refused
    /// (JWS makes such a token invalid, whatever its signature).
    func testATokenWithAnUnknownCriticalHeaderIsRefused() async throws {
        let rules = try temporaryFile(#"{"rules":{".read":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: TestSecrets.jwt), digestAlgorithm: .sha256, kid: "test")
        let algorithm = try await keys.getKey(for: "test")
        let now = Int64(Date().timeIntervalSince1970)
        let claims: JSONValue = .object(["sub": "mallory", "iat": .int(now), "exp": .int(now + 3600)])
        let plain = try TokenMinter.sign(
            header: .object(["alg": "HS256", "typ": "JWT"]), claims: claims, with: algorithm)
        let critical = try TokenMinter.sign(
            header: .object([
                "alg": "HS256", "typ": "JWT", "crit": .array(["x-hearth-unknown"]), "x-hearth-unknown": .bool(true),
            ]),
            claims: claims, with: algorithm)
        let server = try AttackServer.start([("rulesFile", .string(rules)), ("jwtSecret", .string(TestSecrets.jwt))])
        defer { server.stop() }
        let connection = try RawConnection(port: server.httpPort)
        XCTAssertEqual(
            try connection.request("GET", "/x.json?auth=\(plain)").status, 200, "the same token without crit")
        XCTAssertEqual(try connection.request("GET", "/x.json?auth=\(critical)").status, 401, "a token with crit")
    }
}
