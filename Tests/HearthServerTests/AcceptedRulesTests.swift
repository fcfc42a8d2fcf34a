import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Rules set at run time are kept in the data directory, never written to the rules file, which
/// may be read-only (a container's `:ro` mount, systemd's `ProtectSystem=strict`): they survive a
/// restart, and the rules file wins again once it changes (docs/security.md, "Rules set at run
/// time"; issue #49, item 2).
final class AcceptedRulesTests: XCTestCase {
    let locked = #"{"rules":{".read":"auth != null",".write":"auth != null"}}"#
    let accepted = #"{"rules":{".write":"auth != null","public":{".read":true}}}"#

    /// A read-only rules file (0444; the test may run as root, so also: its bytes never change),
    /// a data directory, and a configuration using both.
    func makeSetup() throws -> (configuration: ServerConfiguration, rulesFile: String, cleanup: () -> Void) {
        let rulesFile = try temporaryFile("// the deployer's rules\n" + locked)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: rulesFile)
        let configuration = secureConfiguration { $0.rulesFile = rulesFile }
        return (
            configuration, rulesFile,
            {
                try? FileManager.default.removeItem(atPath: rulesFile)
                try? FileManager.default.removeItem(atPath: configuration.dataDirectory)
            }
        )
    }

    /// Whether an unauthenticated read of /public is allowed on `server`.
    func publicIsReadable(_ server: HearthServer) throws -> Bool {
        let client = try TestClient(port: server.port)
        defer { client.close() }
        return try client.request(#"{"op":"get","path":"/public"}"#)["ok"] == .bool(true)
    }

    func start(_ configuration: ServerConfiguration) async throws -> HearthServer {
        try await HearthServer.start(configuration: configuration, logger: quietLogger)
    }

    func testRulesSetWithAReadOnlyRulesFileSurviveARestart() async throws {
        let (configuration, rulesFile, cleanup) = try makeSetup()
        defer { cleanup() }
        let original = try Data(contentsOf: URL(fileURLWithPath: rulesFile))

        var server = try await start(configuration)
        XCTAssertFalse(try publicIsReadable(server))
        let admin = try TestClient(port: server.port)
        try admin.authAdmin()
        let answer = try admin.request(#"{"op":"setRules","rules":\#(accepted)}"#)
        admin.close()
        XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        XCTAssertNil(answer["warning"], "\(answer)")
        XCTAssertTrue(try publicIsReadable(server))
        await server.shutdown()

        // The rules file is untouched; the accepted rules are in the data directory.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: rulesFile)), original)
        let kept = try JSONParser.parse(
            Array(try Data(contentsOf: URL(fileURLWithPath: configuration.dataDirectory + "/rules.accepted.json"))))
        XCTAssertEqual(kept["document"], try JSONParser.parse(accepted))

        server = try await start(configuration)
        XCTAssertTrue(try publicIsReadable(server), "the accepted rules are not in force after a restart")
        let reader = try TestClient(port: server.port)
        try reader.authAdmin()
        XCTAssertEqual(try reader.request(#"{"op":"getRules"}"#)["rules"], try JSONParser.parse(accepted))
        reader.close()
        await server.shutdown()
    }

    /// The same through the HTTP API's rules endpoint.
    func testRulesPutOverHTTPAreKeptInTheDataDirectory() async throws {
        let (configuration, rulesFile, cleanup) = try makeSetup()
        defer { cleanup() }
        let original = try Data(contentsOf: URL(fileURLWithPath: rulesFile))
        var server = try await start(configuration)
        let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
        let put = try http.request("PUT", "/.settings/rules.json?auth=\(TestSecrets.admin)", body: accepted)
        http.close()
        XCTAssertEqual(put.status, 200, put.text)
        await server.shutdown()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: rulesFile)), original)
        server = try await start(configuration)
        XCTAssertTrue(try publicIsReadable(server))
        await server.shutdown()
    }

    /// Precedence: once the rules file changes after rules were set, the file wins, at a restart
    /// and on SIGHUP (`reload`); until then the accepted rules do, on SIGHUP too.
    func testAChangedRulesFileWinsOverAcceptedRules() async throws {
        let (configuration, rulesFile, cleanup) = try makeSetup()
        defer { cleanup() }
        var server = try await start(configuration)
        let admin = try TestClient(port: server.port)
        try admin.authAdmin()
        XCTAssertEqual(try admin.request(#"{"op":"setRules","rules":\#(accepted)}"#)["ok"], .bool(true))
        admin.close()
        // A reload with the rules file unchanged keeps the accepted rules.
        var failures = await server.reload()
        XCTAssertEqual(failures, [])
        XCTAssertTrue(try publicIsReadable(server))

        // The deployer edits the rules file: a reload puts it in force.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: rulesFile)
        try (locked + "\n// edited\n").write(toFile: rulesFile, atomically: false, encoding: .utf8)
        failures = await server.reload()
        XCTAssertEqual(failures, [])
        XCTAssertFalse(try publicIsReadable(server), "the edited rules file did not win on reload")
        await server.shutdown()

        // And at a restart.
        server = try await start(configuration)
        XCTAssertFalse(try publicIsReadable(server), "the edited rules file did not win at start")
        // Rules set again win again.
        let again = try TestClient(port: server.port)
        try again.authAdmin()
        XCTAssertEqual(try again.request(#"{"op":"setRules","rules":\#(accepted)}"#)["ok"], .bool(true))
        again.close()
        await server.shutdown()
        server = try await start(configuration)
        XCTAssertTrue(try publicIsReadable(server))
        await server.shutdown()
    }

    /// A data directory where the rules cannot be kept: `setRules` fails with `unavailable` and
    /// the old rules stay.
    func testRulesThatCannotBeKeptAreRefused() async throws {
        let (configuration, _, cleanup) = try makeSetup()
        defer { cleanup() }
        let server = try await start(configuration)
        // A directory in the way of the file: the rename over it fails, whoever runs the test.
        try FileManager.default.createDirectory(
            atPath: configuration.dataDirectory + "/rules.accepted.json/x", withIntermediateDirectories: true)
        let admin = try TestClient(port: server.port)
        try admin.authAdmin()
        let answer = try admin.request(#"{"op":"setRules","rules":\#(accepted)}"#)
        admin.close()
        XCTAssertEqual(answer["error"]?["code"], .string("unavailable"), "\(answer)")
        XCTAssertFalse(try publicIsReadable(server))
        await server.shutdown()
    }
}
