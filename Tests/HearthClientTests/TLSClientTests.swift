import Foundation
import HearthTestSupport
import XCTest

@testable import HearthClient

/// `hearths://` against the real server with a certificate from a throwaway CA.
final class TLSClientTests: XCTestCase {
    static let openRules = #"{"rules":{".read":true,".write":true}}"#

    func withTLSServer(_ body: (SecureTestServer, TestPKI) async throws -> Void) async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        try await withSecureServer(rules: Self.openRules, tls: pki) { server in try await body(server, pki) }
    }

    func testHearthsWithTrustedCA() async throws {
        try await withTLSServer { server, pki in
            XCTAssertTrue(server.url.hasPrefix("hearths://"))
            let db = server.client { $0.tlsTrustRoots = .pemFiles([pki.path("ca.crt")]) }
            defer { db.goOffline() }
            XCTAssertEqual(db.url, server.url)
            try await db.waitForConnection()
            try await db.reference(withPath: "tls/check").setValue(["ok": true])
            let stored = try await db.reference(withPath: "tls/check/ok").getData().value as? Bool
            XCTAssertEqual(stored, true)

            // By name too, and with the CA given as PEM text.
            let pem = try String(contentsOfFile: pki.path("ca.crt"), encoding: .utf8)
            let byName = server.client(url: "hearths://localhost:\(server.configuration.port)") {
                $0.tlsTrustRoots = .pemCertificates([pem])
            }
            defer { byName.goOffline() }
            let storedByName = try await byName.reference(withPath: "tls/check/ok").getData().value as? Bool
            XCTAssertEqual(storedByName, true)
        }
    }

    func testUntrustedCAIsRefused() async throws {
        try await withTLSServer { server, pki in
            try pki.makeCA("other")
            let db = server.client { $0.tlsTrustRoots = .pemFiles([pki.path("other.crt")]) }
            defer { db.goOffline() }
            let error = await thrownError { try await db.waitForConnection() }
            XCTAssertEqual(error?.code, .connectionFailed)
            XCTAssertEqual(error?.message.contains("TLS handshake failed"), true, error?.message ?? "")
            XCTAssertEqual(error?.message.contains("not signed by a trusted CA"), true, error?.message ?? "")

            // The system roots do not know the test CA either.
            let system = server.client()
            defer { system.goOffline() }
            let systemRootsCode = await thrownError { try await system.waitForConnection() }?.code
            XCTAssertEqual(systemRootsCode, .connectionFailed)
        }
    }

    func testPlainURLAgainstTLSServerAndTLSAgainstPlainServerFail() async throws {
        try await withTLSServer { server, pki in
            let plain = server.client(url: "hearth://127.0.0.1:\(server.configuration.port)")
            defer { plain.goOffline() }
            // The TLS server waits for a handshake: a request's bytes make it fail and close.
            let ping = Task { try await plain.ping() }
            defer { ping.cancel() }
            let plainCode = await thrownError { try await plain.waitForConnection() }?.code
            XCTAssertEqual(plainCode, .connectionFailed)
        }
        try await withSecureServer(rules: Self.openRules) { server in
            let pki = try TestPKI.serverPKI()
            defer { pki.remove() }
            let db = server.client(url: "hearths://127.0.0.1:\(server.configuration.port)") {
                $0.tlsTrustRoots = .pemFiles([pki.path("ca.crt")])
            }
            defer { db.goOffline() }
            let error = await thrownError { try await db.waitForConnection() }
            XCTAssertEqual(error?.code, .connectionFailed)
            XCTAssertEqual(error?.message.contains("TLS"), true, error?.message ?? "")
        }
    }

    /// The wrong port or scheme fails within about a second with the fix, rather than after the
    /// caller's timeout: the HTTP port (plain or HTTPS) answers HTTP, a TLS port reached with
    /// `hearth://` fails its handshake.
    func testTheWrongPortOrSchemeFailsAtOnceNamingTheFix() async throws {
        func firstFailure(_ db: Database) async throws -> (HearthError?, Double) {
            let started = Date()
            let error = try await withinSeconds(5) { await thrownError { try await db.waitForConnection() } }
            return (error, Date().timeIntervalSince(started))
        }
        try await withSecureServer(rules: Self.openRules) { server in
            let httpPort = try XCTUnwrap(server.server.httpPort)
            let db = server.client(url: "hearth://127.0.0.1:\(httpPort)")
            defer { db.goOffline() }
            let (error, seconds) = try await firstFailure(db)
            XCTAssertEqual(error?.code, .connectionFailed)
            XCTAssertEqual(error?.message.contains("an HTTP server answered"), true, error?.message ?? "")
            XCTAssertEqual(error?.message.contains("hearthd's port"), true, error?.message ?? "")
            XCTAssertLessThan(seconds, 2)
        }
        try await withTLSServer { server, pki in
            let httpPort = try XCTUnwrap(server.server.httpPort)
            for port in [server.configuration.port, httpPort] {
                let db = server.client(url: "hearth://127.0.0.1:\(port)")
                defer { db.goOffline() }
                let (error, seconds) = try await firstFailure(db)
                XCTAssertEqual(error?.code, .connectionFailed)
                XCTAssertEqual(error?.message.contains("hearths://127.0.0.1:\(port)"), true, error?.message ?? "")
                XCTAssertLessThan(seconds, 2)
            }
            let https = server.client(url: "hearths://127.0.0.1:\(httpPort)") {
                $0.tlsTrustRoots = .pemFiles([pki.path("ca.crt")])
            }
            defer { https.goOffline() }
            let (error, seconds) = try await firstFailure(https)
            XCTAssertEqual(error?.message.contains("an HTTP server answered"), true, error?.message ?? "")
            XCTAssertEqual(error?.message.contains("use hearths://127.0.0.1:<port>"), true, error?.message ?? "")
            XCTAssertLessThan(seconds, 2)
        }
    }

    func testUnreadableCAFileIsAConnectionError() async throws {
        try await withTLSServer { server, _ in
            let db = server.client { $0.tlsTrustRoots = .pemFiles(["/nonexistent/ca.pem"]) }
            defer { db.goOffline() }
            let error = await thrownError { try await db.waitForConnection() }
            XCTAssertEqual(error?.code, .connectionFailed)
            XCTAssertEqual(error?.message.contains("/nonexistent/ca.pem"), true, error?.message ?? "")
        }
    }

    func testURLSchemes() throws {
        XCTAssertEqual(try DatabaseURL("hearths://example.com").description, "hearths://example.com:9000")
        XCTAssertTrue(try DatabaseURL("hearths://example.com:9443/").tls)
        XCTAssertFalse(try DatabaseURL("hearth://example.com").tls)
        XCTAssertEqual(try DatabaseURL("hearths://[::1]:1").description, "hearths://[::1]:1")
        XCTAssertThrowsError(try DatabaseURL("https://example.com"))
    }
}

/// `body`'s result, or a failure when it takes longer than `seconds` (the test goes on).
private func withinSeconds<T: Sendable>(
    _ seconds: Double, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else {
            throw NoAnswer(seconds: seconds)
        }
        return result
    }
}

private struct NoAnswer: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "no answer within \(seconds) s" }
}
