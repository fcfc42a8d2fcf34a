import Foundation
import HearthTestSupport
import XCTest

/// What the deployment files rely on in `hearthd` itself (issue #49, items 2 and 7): the health
/// check the container image runs, with and without TLS; the start-up warning of locked rules
/// nobody can sign in to; the TLS start-up line; missing parents of the data directory.
final class DaemonDeploymentTests: XCTestCase {
    /// A `hearthd` process started on free ports, with its stderr.
    struct Daemon {
        let process: CLIProcess
        let port: Int
        let httpPort: Int?

        /// Stops it with SIGTERM and returns its whole log.
        func stop() throws -> CLIResult {
            kill(process.process.processIdentifier, SIGTERM)
            return try process.finish(timeout: 15)
        }
    }

    /// Starts `hearthd arguments…` and waits (10 s at most) for its `serving` line.
    func startDaemon(_ arguments: [String], environment: [String: String] = [:]) throws -> Daemon {
        let process = try CLIProcess(arguments, url: nil, executable: "hearthd", environment: environment)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let log = process.stderr
            if let port = Self.number(after: #"serving .* on 127\.0\.0\.1:"#, in: log) {
                let httpPort = Self.number(after: #"HTTP API \(Firebase REST\) on https?://127\.0\.0\.1:"#, in: log)
                return Daemon(process: process, port: port, httpPort: httpPort)
            }
            if !process.process.isRunning { break }
            usleep(10_000)
        }
        kill(process.process.processIdentifier, SIGKILL)
        let result = try process.finish(timeout: 5)
        throw TestFailure("hearthd did not start: \(result.stderr)")
    }

    static func number(after pattern: String, in text: String) -> Int? {
        guard let range = text.range(of: pattern + #"[0-9]+"#, options: .regularExpression) else { return nil }
        return text[range].split(separator: ":").last.flatMap { Int($0) }
    }

    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearthd-deploy-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func healthCheck(_ daemon: Daemon, environment: [String: String] = [:]) throws -> CLIResult {
        var arguments = ["--health-check", "--port", "\(daemon.port)"]
        arguments += ["--http-port", daemon.httpPort.map(String.init) ?? "off"]
        return try CLIProcess(arguments, url: nil, executable: "hearthd", environment: environment).finish(timeout: 10)
    }

    /// The image's health check is `hearthd --health-check`, reading the same settings as the
    /// server: against a TLS hearthd it passes with the TLS settings, fails without them (plain
    /// text to a TLS port), and fails once the server has stopped. The start-up line says TLS.
    func testTheHealthCheckFollowsTLS() throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tls = ["HEARTH_TLS_CERTIFICATE": pki.path("server.crt"), "HEARTH_TLS_KEY": pki.path("server.key")]
        let daemon = try startDaemon(
            ["--port", "0", "--http-port", "0", "--data-dir", "\(directory)/data", "--fsync", "never"],
            environment: tls)
        var stopped = false
        defer { if !stopped { _ = try? daemon.stop() } }
        XCTAssertNotNil(daemon.httpPort, daemon.process.stderr)
        XCTAssertTrue(
            daemon.process.stderr.contains("on 127.0.0.1:\(daemon.port) over TLS (hearths://)"), daemon.process.stderr)

        var result = try healthCheck(daemon, environment: tls)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")

        result = try healthCheck(daemon)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.hasPrefix("unhealthy: "), result.stderr)

        // The HTTP API off: the TCP check alone.
        result = try CLIProcess(
            ["--health-check", "--port", "\(daemon.port)", "--http-port", "off"], url: nil, executable: "hearthd",
            environment: tls
        ).finish(timeout: 10)
        XCTAssertEqual(result.status, 0, result.stderr)

        let log = try daemon.stop()
        stopped = true
        XCTAssertEqual(log.status, 0, log.stderr)
        result = try healthCheck(daemon, environment: tls)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("no hello from 127.0.0.1:\(daemon.port) (TLS)"), result.stderr)
    }

    /// Without TLS the same check passes against a plain server; its start-up line says nothing
    /// of TLS.
    func testTheHealthCheckOfAPlainServer() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try startDaemon(["--port", "0", "--http-port", "0", "--data-dir", "\(directory)/data"])
        XCTAssertFalse(daemon.process.stderr.contains("TLS"), daemon.process.stderr)
        var result = try healthCheck(daemon)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try daemon.stop().status, 0)
        // Nothing listening: unhealthy, exit 1 (and no crash, whichever thread ends first).
        for _ in 0..<3 {
            result = try healthCheck(daemon)
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertTrue(result.stderr.hasPrefix("unhealthy: no hello from 127.0.0.1:"), result.stderr)
        }
    }

    /// The image's locked rules with no admin secret and no JWT key serve nothing to anyone: the
    /// start says so at warning, naming what to configure. With a secret there is no warning.
    /// The data directory's missing parents are created.
    func testLockedRulesNobodyCanSignInToAreWarnedAbout() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rulesFile = "\(directory)/rules.json"
        try #"{"rules":{".read":"auth != null",".write":"auth != null"}}"#.write(
            toFile: rulesFile, atomically: true, encoding: .utf8)
        let dataDirectory = "\(directory)/srv/hearth/db"
        var environment: [String: String] = [:]
        let arguments = ["--port", "0", "--http-port", "off", "--rules-file", rulesFile, "--data-dir", dataDirectory]
        var log = try startDaemon(arguments, environment: environment).stop()
        XCTAssertEqual(log.status, 0, log.stderr)
        let warning = try XCTUnwrap(
            log.stderr.split(separator: "\n").first { $0.contains("nobody can sign in") }, log.stderr)
        XCTAssertTrue(warning.contains("warning"), String(warning))
        for named in ["HEARTH_ADMIN_SECRET", "HEARTH_JWT_SECRET", "jwtPublicKeys"] {
            XCTAssertTrue(warning.contains(named), "\(named) is not named: \(warning)")
        }
        var isDirectory: ObjCBool = false
        XCTAssertTrue(FileManager.default.fileExists(atPath: dataDirectory, isDirectory: &isDirectory))
        XCTAssertTrue(isDirectory.boolValue)

        environment["HEARTH_ADMIN_SECRET"] = "deploy-test-admin-secret-0123456789"
        log = try startDaemon(arguments, environment: environment).stop()
        XCTAssertEqual(log.status, 0, log.stderr)
        XCTAssertFalse(log.stderr.contains("nobody can sign in"), log.stderr)
        XCTAssertTrue(log.stderr.contains("rules in force"), log.stderr)
    }
}
