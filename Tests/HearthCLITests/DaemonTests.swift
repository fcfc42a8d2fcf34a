import Foundation
import HearthServer
import XCTest

/// The `hearthd` executable's startup messages and exit statuses (issue #16, items 4, 6, 7).
final class DaemonTests: XCTestCase {
    func hearthd(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 30) throws -> CLIResult {
        try CLIProcess(arguments, url: nil, executable: "hearthd", environment: environment).finish(timeout: timeout)
    }

    func testATakenPortIsReportedBeforeRecovery() async throws {
        try await withCLIServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "hearthd-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let result = try hearthd([
                "--port", "\(server.server.port)", "--data-dir", directory.path, "--log-level", "info",
            ])
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertEqual(
                result.stderr.split(separator: "\n").last.map(String.init),
                "Error: cannot listen on 127.0.0.1:\(server.server.port): address already in use "
                    + "(another hearthd? set --port or --http-port)")
            // Nothing was recovered (or even created) first.
            XCTAssertFalse(result.stderr.contains("recover"), result.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path))
        }
    }

    func testEveryBadSettingExitsWith64() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearthd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("hearth.json")
        try Data(#"{"prot": 9000}"#.utf8).write(to: config)
        let cases: [([String], [String: String], String)] = [
            (["--port", "abc"], [:], "--port"),  // rejected by the argument parser
            (["--port", "99999"], [:], "port"),
            (["--fsync", "sometimes"], [:], "fsync"),
            ([], ["HEARTH_PORT": "abc"], "HEARTH_PORT"),
            (["--config", config.path], [:], "prot"),
            (["--config", directory.appendingPathComponent("missing.json").path], [:], "missing.json"),
        ]
        for (arguments, environment, named) in cases {
            let result = try hearthd(
                arguments + ["--data-dir", directory.appendingPathComponent("data").path],
                environment: environment)
            XCTAssertEqual(result.status, 64, "\(arguments) \(environment): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("Error: "), result.stderr)
            XCTAssertTrue(result.stderr.contains(named), "\(arguments) \(environment): \(result.stderr)")
        }
    }

    func testVersionAndHelp() throws {
        var result = try hearthd(["--version"])
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "\(hearthVersion)\n")
        // At 80 columns the overview is wrapped by the parser only: no line ends early in the
        // middle of a paragraph (the text used to carry its own line breaks).
        for (executable, arguments) in [("hearthd", ["--help"]), ("hearth", ["check", "--help"])] {
            result = try CLIProcess(arguments, url: nil, executable: executable, environment: ["COLUMNS": "80"])
                .finish()
            XCTAssertEqual(result.status, 0, result.stderr)
            // The paragraph after the one-line abstract.
            let blocks = result.stdout.components(separatedBy: "\n\n")
            let overview = blocks.count > 1 && blocks[0].hasPrefix("OVERVIEW:") ? blocks[1] : ""
            let lines = overview.split(separator: "\n", omittingEmptySubsequences: false)
            XCTAssertGreaterThan(lines.count, 2, result.stdout)
            for line in lines.dropLast() {
                XCTAssertGreaterThan(line.count, 50, "a line broken early in \(executable) --help: \(line)")
            }
            XCTAssertTrue(
                overview.replacingOccurrences(of: "\n", with: " ").contains("the configuration file")
                    || executable == "hearth", overview)
        }
    }
}
