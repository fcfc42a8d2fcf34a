import Foundation
import HearthJSON
import HearthServer
import Logging
import XCTest

/// What `hearth` and `hearthd` tell a person: connection failures, progress, the version, help,
/// exit statuses and a port in use (issue #16).
final class CLIMessagesTests: XCTestCase {
    /// A loopback port nothing listens on: a server's, after it stopped.
    func freePort() async throws -> Int {
        let server = try await CLIServer.start()
        let port = server.server.port
        await server.remove()
        return port
    }

    func testARefusedConnectionFailsAtOnceAndSaysSo() async throws {
        let port = try await freePort()
        // --timeout 60, but a refused connection must not wait for it.
        let result = try CLIProcess(["get", "/", "--timeout", "60"], url: "hearth://127.0.0.1:\(port)").finish(
            timeout: 20)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "")
        XCTAssertEqual(
            result.stderr,
            "hearth: cannot connect to hearth://127.0.0.1:\(port): connection refused (is hearthd running?)\n")
    }

    func testAnUnknownHostIsNamed() throws {
        let result = try CLIProcess(["ping", "--timeout", "60"], url: "hearth://no-such-host.invalid:9000").finish(
            timeout: 50)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stderr.hasPrefix("hearth: cannot connect to hearth://no-such-host.invalid:9000: unknown host"),
            result.stderr)
        XCTAssertTrue(result.stderr.contains("\"no-such-host.invalid\""), result.stderr)
    }

    func testQueryErrorsUseTheFlagNames() async throws {
        try await withCLIServer { server in
            let cases: [([String], String)] = [
                (["--order-by-key", "--start-at", "1"], "--start-at must be a string"),
                (["--order-by-key", "--start-at", #""a""#, "--start-at-key", "b"], "--start-at-key can't be used"),
                (["--order-by-child", "$key"], "use --order-by-key instead"),
                (["--start-at", "1", "--equal-to", "2"], "(by --start-at, --start-after or --equal-to)"),
                (["--limit-to-first", "0"], "--limit-to-first must be a positive integer"),
            ]
            for (flags, expected) in cases {
                let result = try CLIProcess(["get", "/x"] + flags, url: server.url).finish()
                XCTAssertEqual(result.status, 2, "\(flags): \(result.stderr)")
                XCTAssertTrue(result.stderr.hasPrefix("hearth: invalid query: "), "\(flags): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains(expected), "\(flags): \(result.stderr)")
                let reason = result.stderr.dropFirst("hearth: invalid query: ".count)
                for name in ["query", "startAt", "orderBy", "limitTo", "equalTo", "invalid_query"] {
                    XCTAssertFalse(reason.contains(name), "\(flags): \(result.stderr)")
                }
            }
        }
    }

    func testVersion() throws {
        let result = try hearth("--version", url: nil)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "\(hearthVersion)\n")
    }

    func testImportProgressCountsTheBytesOfTheFile() async throws {
        try await withCLIServer { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            // Spaces and a number spelt 1.50 make the file larger than its JSON re-serialized.
            let text = "{\n  \"a\": 1.50,\n  \"b\": [1, 2, 3],\n  \"c\": {\"d\": \"e\"}\n}\n"
            try Data(text.utf8).write(to: file)
            let result = try hearth("import", "/imported", file.path, url: server.url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stderr.contains("(\(text.utf8.count)/\(text.utf8.count) bytes"), result.stderr)
        }
    }

    func testLargeImportSaysWhatItDoesBeforeTheFirstUpdate() async throws {
        try await withCLIServer { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            let members = (0..<60_000).map { JSONMember(String(format: "k%05d", $0), .string("value \($0)")) }
            try Data(JSONValue.object(members).serialized).write(to: file)
            let result = try hearth(
                "import", "/big", file.path, "--batch-bytes", "262144", "--timeout", "60", url: server.url, timeout: 120
            )
            XCTAssertEqual(result.status, 0, result.stderr)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            XCTAssertTrue(lines.first?.hasPrefix("import: parsing \(file.path) (") ?? false, result.stderr)
            for step in [
                "import: cutting it into updates", "import: connecting to", "import: removing",
                "import: writing /big in",
            ] {
                XCTAssertTrue(lines.contains { $0.hasPrefix(step) }, "\(step): \(result.stderr)")
            }
            XCTAssertTrue(lines.last?.hasPrefix("import: 100% (") ?? false, result.stderr)
        }
    }

    func testListenSaysWhenTheServerGoesAndComesBack() async throws {
        let first = try await CLIServer.start()
        let port = first.server.port
        let listen = try CLIProcess(["listen", "/x"], url: first.url)
        _ = try listen.waitForLines(1)
        await first.server.shutdown()
        try await waitFor("the lost connection", in: listen) { $0.contains("hearth: lost the connection to") }
        var configuration = first.server.configuration
        configuration.port = port
        let second = try await HearthServer.start(
            configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        do {
            try await waitFor("the reconnection", in: listen) {
                $0.contains("hearth: reconnected to hearth://127.0.0.1:\(port)")
            }
        } catch {
            kill(listen.process.processIdentifier, SIGINT)
            _ = try? listen.finish()
            await second.shutdown()
            throw error
        }
        kill(listen.process.processIdentifier, SIGINT)
        let result = try listen.finish()
        await second.shutdown()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout.split(separator: "\n").count, 1, result.stdout)
    }

    func waitFor(_ what: String, in process: CLIProcess, _ condition: (String) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if condition(process.stderr) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("waited 30 s for \(what); stderr: \(process.stderr)")
    }
}
