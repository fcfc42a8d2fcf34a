import Foundation
import HearthAuth
import HearthJSON
import HearthServer
import HearthTestSupport
import Logging
import NIOConcurrencyHelpers
import XCTest

@testable import HearthClient

/// The secrets of the secure test servers (test fixtures, never real secrets).
enum ClientTestSecrets {
    static let admin = "client-test-admin-secret-0123456789"
    /// HS256 secrets must be at least 32 bytes.
    static let jwt = "client-test-jwt-secret-for-hs256-tokens"
}

/// A real server with rules, an admin secret and an HS256 key (and TLS when asked), on a free
/// loopback port with a temporary data directory and rules file; it can be restarted on the
/// same port.
final class SecureTestServer: @unchecked Sendable {
    // Mutated only by the test that owns it, between awaits.
    private(set) var server: HearthServer
    let configuration: ServerConfiguration

    private init(server: HearthServer, configuration: ServerConfiguration) {
        self.server = server
        self.configuration = configuration
    }

    /// Starts a server enforcing `rules` (a rules document's text).
    static func start(
        rules: String, _ modify: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> SecureTestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hearth-client-secure-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let rulesFile = directory.appendingPathComponent("rules.json").path
        try rules.write(toFile: rulesFile, atomically: true, encoding: .utf8)
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory = directory.appendingPathComponent("data").path
        configuration.fsync = .never
        configuration.rulesFile = rulesFile
        configuration.tokens.adminSecrets = [ClientTestSecrets.admin]
        configuration.tokens.jwtSecret = ClientTestSecrets.jwt
        modify(&configuration)
        let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        configuration.port = server.port
        return SecureTestServer(server: server, configuration: configuration)
    }

    var url: String {
        "\(configuration.tlsCertificate == nil ? "hearth" : "hearths")://127.0.0.1:\(configuration.port)"
    }

    func stop() async { await server.shutdown() }

    /// Starts a new server on the same port, data directory and rules file (after `stop()`).
    func restart() async throws {
        server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
    }

    func remove() async {
        await server.shutdown()
        if let rulesFile = configuration.rulesFile {
            try? FileManager.default.removeItem(atPath: (rulesFile as NSString).deletingLastPathComponent)
        }
    }

    /// A client that reconnects quickly; `modify` sets the token provider, trust roots, ….
    func client(
        url: String? = nil, _ modify: (inout Database.Configuration) -> Void = { _ in }
    ) -> Database {
        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(20)
        configuration.reconnectMaxDelay = .milliseconds(200)
        modify(&configuration)
        return Database(url: url ?? self.url, configuration: configuration)
    }

    /// A client authenticated with the admin secret.
    func adminClient() async throws -> Database {
        let admin = client()
        let identity = try await admin.auth(token: ClientTestSecrets.admin)
        XCTAssertEqual(identity?.isAdmin, true)
        return admin
    }
}

/// Runs `body` with a secure server enforcing `rules`, removing it afterwards; with `pki`, the
/// server speaks TLS with its `server` certificate; `clockSkewSeconds` sets the JWT tolerance.
func withSecureServer(
    rules: String, tls pki: TestPKI? = nil, clockSkewSeconds: Int? = nil,
    _ body: (SecureTestServer) async throws -> Void
) async throws {
    let server = try await SecureTestServer.start(rules: rules) { configuration in
        if let pki {
            configuration.tlsCertificate = pki.path("server.crt")
            configuration.tlsKey = pki.path("server.key")
        }
        if let clockSkewSeconds { configuration.tokens.clockSkewSeconds = clockSkewSeconds }
    }
    do {
        try await body(server)
    } catch {
        await server.remove()
        throw error
    }
    await server.remove()
}

/// An HS256 token for `uid` signed with the test secret, valid from now for `ttlSeconds`.
func mintToken(uid: String, claims: JSONValue = .object([]), ttlSeconds: Int64 = 3600) async throws -> String {
    try await TokenMinter(secret: ClientTestSecrets.jwt).mint(
        uid: uid, claims: claims, now: Int64(Date().timeIntervalSince1970), ttlSeconds: ttlSeconds)
}

/// A token provider that mints a new token for `uid` on each call (each with a claim `n`
/// counting the calls, so no two are equal) and records them.
final class CountingTokenProvider: Sendable {
    let uid: String
    let ttlSeconds: Int64
    private let tokens = NIOLockedValueBox<[String]>([])

    init(uid: String, ttlSeconds: Int64 = 3600) {
        self.uid = uid
        self.ttlSeconds = ttlSeconds
    }

    var issued: [String] { tokens.withLockedValue { $0 } }

    var provider: @Sendable () async throws -> String? {
        {
            let n = self.tokens.withLockedValue { $0.count } + 1
            let token = try await mintToken(
                uid: self.uid, claims: .object([JSONMember("n", .int(Int64(n)))]), ttlSeconds: self.ttlSeconds)
            self.tokens.withLockedValue { $0.append(token) }
            return token
        }
    }
}

/// The error `body` throws, failing the test when it throws none.
func thrownError(
    _ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line
) async -> HearthError? {
    do {
        try await body()
        XCTFail("expected an error", file: file, line: line)
        return nil
    } catch let error as HearthError {
        return error
    } catch {
        XCTFail("expected a HearthError, got \(error)", file: file, line: line)
        return nil
    }
}
