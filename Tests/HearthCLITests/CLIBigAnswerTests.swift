import Foundation
import HearthJSON
import HearthServer
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Answers and first events larger than the server's `maxOutboundBytes`, through a slow link
/// (`ThrottledProxy`): `get` waits while its answer keeps arriving, and `listen` stops, with
/// what to do, when the server keeps closing its connection, instead of reconnecting in a loop.
final class CLIBigAnswerTests: XCTestCase {
    /// `count` children of about 1 KiB each, as one JSON object.
    private func children(_ count: Int) -> String {
        let filler = String(repeating: "x", count: 1000)
        return "{" + (0..<count).map { #""c\#($0)":"\#(filler)""# }.joined(separator: ",") + "}"
    }

    private func smallOutbox(_ configuration: inout ServerConfiguration) {
        configuration.maxOutboundBytes = 1 << 20
    }

    func testAGetWaitsWhileItsAnswerKeepsArriving() async throws {
        try await withCLIServer(configure: smallOutbox) { server in
            // 2 MiB answered through a link of 512 KiB/s: about 4 s, with a 1.5 s timeout.
            let imported = try hearth("import", "/big", "-", url: server.url, stdin: children(2000), timeout: 30)
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let proxy = try ThrottledProxy(to: server.server.port, bytesPerSecond: 512 * 1024)
            defer { proxy.stop() }
            let started = Date()
            let result = try hearth("get", "/big", "--timeout", "1.5", url: proxy.url, timeout: 20)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertGreaterThan(Date().timeIntervalSince(started), 2, "the link was not slow enough to test anything")
            XCTAssertEqual(try result.json().objectMembers?.count, 2000)
        }
    }

    func testExportingOneLargeChildShowsTheBytesOfItThatArrived() async throws {
        try await withCLIServer { server in
            // One child of 2 MiB, read through a link of 512 KiB/s: its page takes about 4 s, and
            // the progress lines (every 2 s when stderr is not a terminal) say how much arrived.
            let imported = try hearth("import", "/one/big", "-", url: server.url, stdin: children(2000), timeout: 30)
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let proxy = try ThrottledProxy(to: server.server.port, bytesPerSecond: 512 * 1024)
            defer { proxy.stop() }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID()).json").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let result = try hearth("export", "/one", file, url: proxy.url, timeout: 30)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stderr.contains("0/1 children"), result.stderr)
            XCTAssertTrue(result.stderr.contains("of this page received"), result.stderr)
            let exported = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
            XCTAssertEqual(exported["big"]?.objectMembers?.count, 2000)
        }
    }

    func testAGetWhoseAnswerStopsArrivingTimesOut() async throws {
        try await withCLIServer { server in
            let imported = try hearth("import", "/big", "-", url: server.url, stdin: children(2000), timeout: 30)
            XCTAssertEqual(imported.status, 0, imported.stderr)
            // A link that passes the hello and the answer's first bytes, then nothing.
            let proxy = try ThrottledProxy(to: server.server.port, bytesPerSecond: 0, stallAfter: 64 * 1024)
            defer { proxy.stop() }
            let started = Date()
            let result = try hearth("get", "/big", "--timeout", "1", url: proxy.url, timeout: 20)
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(
                result.stderr.contains("get: stalled (nothing sent or received for 1.0 s)"), result.stderr)
            XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        }
    }

    func testAListenTheServerKeepsCuttingStopsWithWhatToDo() async throws {
        try await withCLIServer(configure: smallOutbox) { server in
            // 6,000 first events of 1 KiB at the root, sent in one go, with 1 MiB of unsent output
            // allowed: the server closes the connection as a slow consumer, every time.
            let imported = try hearth("import", "/", "-", url: server.url, stdin: children(6000), timeout: 30)
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let proxy = try ThrottledProxy(to: server.server.port, bytesPerSecond: 0)
            defer { proxy.stop() }
            let started = Date()
            let listen = try CLIProcess(["listen", "/"], url: proxy.url)
            defer { if listen.process.isRunning { kill(listen.process.processIdentifier, SIGKILL) } }
            while listen.process.isRunning && Date().timeIntervalSince(started) < 15 { usleep(20_000) }
            guard !listen.process.isRunning else {
                XCTFail(
                    "listen still runs after 15 s (\(proxy.connections) connections; stdout \(listen.stdout.utf8.count) bytes): "
                        + "if the server now sends these first events, this test needs another refusal that repeats; "
                        + "stderr: \(listen.stderr)")
                return
            }
            let result = try listen.finish()
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("slow_consumer"), result.stderr)
            XCTAssertTrue(result.stderr.contains("3 times in a row"), result.stderr)
            XCTAssertTrue(result.stderr.contains("a narrower path"), result.stderr)
            XCTAssertTrue(result.stderr.contains("hearth export /"), result.stderr)
            XCTAssertTrue(result.stderr.contains("lost the connection"), result.stderr)
            XCTAssertEqual(result.stdout, "")
            // Three cut connections, then it stops (one more may have opened meanwhile).
            XCTAssertLessThanOrEqual(proxy.connections, 4, result.stderr)
        }
    }
}
