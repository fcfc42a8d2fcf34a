import Crypto
import HearthFunctions
import XCTest

/// `Hearth-Signature`: good signatures, tampering, wrong secrets, clock skew, malformed headers.
final class SignatureVerifierTests: XCTestCase {
    private let secret = "whsec-test-0123456789abcdef"
    private let body = Array(#"{"id":"e1","kind":"create"}"#.utf8)
    private let now: Int64 = 1_800_000_000

    private func header(_ body: [UInt8], secret: String? = nil, at time: Int64? = nil) -> String {
        SignatureVerifier.signatureHeader(
            body: body, secret: Array((secret ?? self.secret).utf8), timestamp: time ?? now)
    }

    private func refusal(_ verifier: SignatureVerifier, _ header: String?, _ body: [UInt8]) -> SignatureError? {
        do {
            try verifier.verify(header: header, body: body, now: now)
            return nil
        } catch {
            return error
        }
    }

    func testSignatureIsHMACOfTimestampDotBody() {
        // The header as the issue's interface defines it, computed independently with Crypto.
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(now).".utf8) + body, using: SymmetricKey(data: Array(secret.utf8)))
        let hex = mac.map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(header(body), "t=\(now),v1=\(hex)")
    }

    func testKnownVector() {
        // Computed outside Swift (Python's hmac and hashlib) for this secret, body and time.
        XCTAssertEqual(
            header(body),
            "t=1800000000,v1=0b591394162931c9d24e115c076da1b4237d024493b34870a37a9285f9be814a")
    }

    func testGoodSignatureVerifies() {
        XCTAssertNil(refusal(SignatureVerifier(secret: secret), header(body), body))
    }

    func testUppercaseHexAndSpacesAndOtherSchemesAreAccepted() {
        let good = header(body)
        let v1 = String(good.split(separator: ",")[1].dropFirst(3)).uppercased()
        let verifier = SignatureVerifier(secret: secret)
        XCTAssertNil(refusal(verifier, "t=\(now), v0=abc, v1=\(v1)", body))
        // Several v1 members: one matching is enough.
        XCTAssertNil(refusal(verifier, "t=\(now),v1=\(String(repeating: "0", count: 64)),v1=\(v1)", body))
    }

    func testTamperedBodyIsRefused() {
        var tampered = body
        tampered[tampered.count - 3] ^= 0x01
        XCTAssertEqual(refusal(SignatureVerifier(secret: secret), header(body), tampered), .mismatch)
        XCTAssertEqual(refusal(SignatureVerifier(secret: secret), header(body), body + [0x20]), .mismatch)
    }

    func testTamperedTimestampIsRefused() {
        let good = header(body)
        let forged = good.replacingOccurrences(of: "t=\(now)", with: "t=\(now + 1)")
        XCTAssertEqual(refusal(SignatureVerifier(secret: secret), forged, body), .mismatch)
    }

    func testWrongSecretIsRefused() {
        XCTAssertEqual(refusal(SignatureVerifier(secret: "another-secret"), header(body), body), .mismatch)
        XCTAssertEqual(refusal(SignatureVerifier(secrets: []), header(body), body), .mismatch)
    }

    func testAnyOfSeveralSecretsVerifies() {
        let rotating = SignatureVerifier(secrets: ["new-secret", secret])
        XCTAssertNil(refusal(rotating, header(body), body))
        XCTAssertNil(refusal(rotating, header(body, secret: "new-secret"), body))
        XCTAssertEqual(refusal(rotating, header(body, secret: "retired"), body), .mismatch)
    }

    func testStaleTimestampIsRefused() {
        let verifier = SignatureVerifier(secret: secret)
        XCTAssertNil(refusal(verifier, header(body, at: now - 300), body))
        XCTAssertEqual(refusal(verifier, header(body, at: now - 301), body), .outsideTolerance(age: 301))
        XCTAssertEqual(
            refusal(SignatureVerifier(secret: secret, tolerance: 10), header(body, at: now - 11), body),
            .outsideTolerance(age: 11))
    }

    func testFutureTimestampIsRefused() {
        let verifier = SignatureVerifier(secret: secret)
        XCTAssertNil(refusal(verifier, header(body, at: now + 300), body))
        XCTAssertEqual(refusal(verifier, header(body, at: now + 301), body), .outsideTolerance(age: -301))
    }

    func testMalformedHeadersAreRefused() {
        let verifier = SignatureVerifier(secret: secret)
        let v1 = String(header(body).split(separator: ",")[1])
        XCTAssertEqual(refusal(verifier, nil, body), .missingHeader)
        XCTAssertEqual(refusal(verifier, "t=\(now)", body), .noV1Signature)
        XCTAssertEqual(refusal(verifier, "t=\(now),v0=\(v1.dropFirst(3))", body), .noV1Signature)
        for malformed in [
            "", v1, "t=,\(v1)", "t=-5,\(v1)", "t=12a,\(v1)", "t=\(now),t=\(now),\(v1)", "t=\(now),v1=xyz",
            "t=\(now),v1=\(String(repeating: "a", count: 62))", "t=\(now);\(v1)", "t=99999999999999999999,\(v1)",
        ] {
            guard case .malformedHeader? = refusal(verifier, malformed, body) else {
                XCTFail("accepted or misread: \(malformed)")
                continue
            }
        }
    }
}
