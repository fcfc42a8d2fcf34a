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
            XCTAssertTrue(result.stderr.contains("the answer stopped arriving (nothing received for 1.0 s)"), result.stderr)
            XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        }
    }

    func testAListenTheServerKeepsCuttingStopsWithWhatToDo() async throws {
        try await withCLIServer(configure: smallOutbox) { server in
            // 6 MiB of first events at a slow link, with 1 MiB of unsent output allowed.
            let imported = try hearth("import", "/many", "-", url: server.url, stdin: children(6000), timeout: 30)
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let proxy = try ThrottledProxy(to: server.server.port, bytesPerSecond: 1 << 20)
            defer { proxy.stop() }
            let started = Date()
            let result = try hearth("listen", "/", url: proxy.url, timeout: 20)
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("slow_consumer"), result.stderr)
            XCTAssertTrue(result.stderr.contains("a narrower path"), result.stderr)
            XCTAssertTrue(result.stderr.contains("hearth export /"), result.stderr)
            XCTAssertEqual(result.stdout, "")
            // Three cut connections, then it stops (one more may have opened meanwhile).
            XCTAssertLessThanOrEqual(proxy.connections, 5, result.stderr)
            XCTAssertLessThan(Date().timeIntervalSince(started), 15)
        }
    }
}
