import Foundation
import HearthServer
import HearthTestSupport
import Logging
import XCTest

/// The secrets of the secure CLI test servers (test fixtures, never real secrets).
enum CLITestSecrets {
    static let admin = "cli-test-admin-secret-0123456789"
    /// HS256 secrets must be at least 32 bytes.
    static let jwt = "cli-test-jwt-secret-for-hs256-tokens!"
}

/// An in-process server with rules, an admin secret and an HS256 key (and TLS when a PKI is
/// given), on a free loopback port, with its files in one temporary directory.
final class CLISecureServer: Sendable {
    let server: HearthServer
    let directory: String
    let tls: Bool

    private init(server: HearthServer, directory: String, tls: Bool) {
        self.server = server
        self.directory = directory
        self.tls = tls
    }

    static func start(rules: String, pki: TestPKI? = nil) async throws -> CLISecureServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hearth-cli-secure-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let rulesFile = "\(directory)/rules.json"
        try rules.write(toFile: rulesFile, atomically: true, encoding: .utf8)
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory = "\(directory)/data"
        configuration.fsync = .never
        configuration.rulesFile = rulesFile
        configuration.tokens.adminSecrets = [CLITestSecrets.admin]
        configuration.tokens.jwtSecret = CLITestSecrets.jwt
        if let pki {
            configuration.tlsCertificate = pki.path("server.crt")
            configuration.tlsKey = pki.path("server.key")
        }
        let logger = Logger(label: "hearth-cli-test") { _ in SwiftLogNoOpLogHandler() }
        let server = try await HearthServer.start(configuration: configuration, logger: logger)
        return CLISecureServer(server: server, directory: directory, tls: pki != nil)
    }

    var url: String { "\(tls ? "hearths" : "hearth")://127.0.0.1:\(server.port)" }

    var rulesFile: String { "\(directory)/rules.json" }

    func remove() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Writes `text` to a file in the server's directory and returns its path.
    func file(_ name: String, _ text: String) throws -> String {
        let path = "\(directory)/\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs `hearth arguments…` against this server with `environment` added (HEARTH_TOKEN and
    /// HEARTH_JWT_SECRET are cleared unless given).
    func hearth(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil) throws -> CLIResult {
        var environment = environment
        for name in ["HEARTH_TOKEN", "HEARTH_JWT_SECRET", "HEARTH_CONFIG"] where environment[name] == nil {
            environment[name] = ""
        }
        return try CLIProcess(arguments, url: url, stdin: stdin, environment: environment).finish()
    }
}

/// Runs `body` with a secure server enforcing `rules`, removing it afterwards.
func withCLISecureServer(
    rules: String, pki: TestPKI? = nil, _ body: (CLISecureServer) async throws -> Void
) async throws {
    let server = try await CLISecureServer.start(rules: rules, pki: pki)
    do {
        try await body(server)
    } catch {
        await server.remove()
        throw error
    }
    await server.remove()
}
