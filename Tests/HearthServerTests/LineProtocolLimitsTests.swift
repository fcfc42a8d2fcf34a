import Foundation
import HearthJSON
import HearthServer
import XCTest

/// The line protocol's share of the hostile-network limits (docs/security.md "Memory",
/// "Timeouts"): a first request in time, unfinished lines that must keep coming, long lines only
/// after sign-in, and answers the client does not read held back rather than piled up.
final class LineProtocolLimitsTests: XCTestCase {
    private let rules = #"{"rules":{".read":"auth != null",".write":"auth != null"}}"#

    func testAConnectionThatSendsNoRequestIsClosedAfterTheFirstRequestTimeout() async throws {
        try await withLiveServer(setting: \.protection.firstRequestTimeoutSeconds, to: 1) { server in
            let silent = try TestClient(port: server.port)
            let started = Date()
            let error = try silent.readJSON(timeout: 5)
            XCTAssertEqual(error["event"], "error")
            XCTAssertEqual(error["error"]?["code"], "bad_request")
            XCTAssertTrue(error["error"]?["message"]?.stringValue?.contains("firstRequestTimeoutSeconds") ?? false)
            XCTAssertTrue(silent.waitForClose(timeout: 5))
            XCTAssertLessThan(Date().timeIntervalSince(started), 4)

            // A client that asks in time keeps its connection past the timeout.
            let busy = try TestClient(port: server.port)
            XCTAssertEqual(try busy.request(#"{"id":1,"op":"ping"}"#)["ok"], .bool(true))
            try await Task.sleep(for: .milliseconds(1_500))
            XCTAssertEqual(try busy.request(#"{"id":2,"op":"get","path":"/"}"#)["ok"], .bool(true))
        }
    }

    func testAnUnfinishedLineThatStopsArrivingIsCut() async throws {
        var configuration = secureConfiguration()
        configuration.protection.firstRequestTimeoutSeconds = 1
        try await withSecureServer(configuration) { server in
            let client = try TestClient(port: server.port)
            XCTAssertEqual(try client.request(#"{"id":1,"op":"ping"}"#)["ok"], .bool(true))
            try client.sendRaw(Array(#"{"id":2,"op":"get","pa"#.utf8))
            let error = try client.readJSON(timeout: 5)
            XCTAssertEqual(error["error"]?["code"], "bad_request")
            XCTAssertTrue(error["error"]?["message"]?.stringValue?.contains("minBodyBytesPerSecond") ?? false)
            XCTAssertTrue(client.waitForClose(timeout: 5))
        }
    }

    func testWithRulesALongLineNeedsASignedInConnection() async throws {
        let rulesFile = try temporaryFile(rules)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        var configuration = secureConfiguration { $0.rulesFile = rulesFile }
        configuration.protection.maxUnauthenticatedBodyBytes = 4096
        try await withSecureServer(configuration) { server in
            let value = String(repeating: "x", count: 8000)
            // A long line from a client that has not signed in is refused before it is read
            // whole, and the connection closes.
            let anonymous = try TestClient(port: server.port)
            XCTAssertEqual(try anonymous.request(#"{"id":1,"op":"ping"}"#)["ok"], .bool(true))
            try anonymous.sendRaw(Array(#"{"id":2,"op":"set","path":"/a","value":"\#(value)"#.utf8))
            let cut = try anonymous.readJSON(timeout: 5)
            XCTAssertEqual(cut["event"], "error")
            XCTAssertEqual(cut["error"]?["code"], "too_large")
            XCTAssertTrue(cut["error"]?["message"]?.stringValue?.contains("maxUnauthenticatedBodyBytes") ?? false)
            XCTAssertTrue(anonymous.waitForClose(timeout: 5))

            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            let stored = try admin.request(#"{"id":3,"op":"set","path":"/a","value":"\#(value)"}"#)
            XCTAssertEqual(stored["ok"], .bool(true))
        }
    }

    func testAnswersAClientDoesNotReadWaitAndTheConnectionIsClosedWhenItStalls() async throws {
        try await withLiveServer(setting: \.protection.writeStallTimeoutSeconds, to: 2) { server in
            let writer = try TestClient(port: server.port)
            let big = String(repeating: "y", count: 4_000_000)
            XCTAssertEqual(
                try writer.request(#"{"id":1,"op":"set","path":"/big","value":"\#(big)"}"#)["ok"], .bool(true))

            let reader = try TestClient(port: server.port)
            let before = residentMegabytes()
            try reader.sendRaw(Array((0..<300).map { #"{"id":\#($0),"op":"get","path":"/big"}"# + "\n" }.joined().utf8))
            // 300 answers of 4 MB would be 1.2 GB; held back, the server stays small and serves
            // others at once.
            var peak = before
            for _ in 0..<10 {
                try await Task.sleep(for: .milliseconds(100))
                peak = max(peak, residentMegabytes())
            }
            XCTAssertLessThan(peak - before, 200, "resident memory grew from \(before) MB to \(peak) MB")
            let started = Date()
            XCTAssertEqual(try writer.request(#"{"id":2,"op":"get","path":"/small"}"#)["ok"], .bool(true))
            XCTAssertLessThan(Date().timeIntervalSince(started), 1)
            // Reading nothing, the reader is disconnected once its output has not moved for 2 s
            // (checked every 2 s; the kernel's socket buffers take the first few megabytes).
            try await Task.sleep(for: .seconds(6))
            XCTAssertTrue(reader.endsWithinBytes(64 << 20, timeout: 5))
        }
    }

    func testALargeAnswerIsNotASlowConsumer() async throws {
        var configuration = secureConfiguration()
        configuration.maxOutboundBytes = 512 << 10
        try await withSecureServer(configuration) { server in
            let client = try TestClient(port: server.port)
            try client.authAdmin()
            let big = String(repeating: "z", count: 3 << 19)
            XCTAssertEqual(
                try client.request(#"{"id":1,"op":"set","path":"/big","value":"\#(big)"}"#)["ok"], .bool(true))
            // Three times maxOutboundBytes in one answer, to a client that reads: delivered.
            let answer = try client.request(#"{"id":2,"op":"get","path":"/big"}"#)
            XCTAssertEqual(answer["value"]?.stringValue?.count, 3 << 19)
            XCTAssertEqual(try client.request(#"{"id":3,"op":"ping"}"#)["ok"], .bool(true))
            // Answers behind a large one in the same turn follow it, whether or not the socket
            // took the large one at once.
            for round in 0..<5 {
                try client.sendRaw(
                    Array(#"{"id":10,"op":"get","path":"/big"}"#.utf8) + [10]
                        + Array(#"{"id":11,"op":"ping"}"#.utf8) + [10])
                let answer = try client.readResponse(timeout: 5)
                XCTAssertEqual(answer["value"]?.stringValue?.count, 3 << 19, "round \(round)")
                XCTAssertEqual(try client.readResponse(timeout: 5)["ok"], .bool(true), "round \(round)")
            }
            // So is a subscription's first event of that size.
            let subscribed = try client.request(#"{"id":4,"op":"subscribe","path":"/big"}"#)
            XCTAssertEqual(subscribed["ok"], .bool(true))
            let first = try client.events.first ?? client.readJSON(timeout: 10)
            XCTAssertEqual(first["value"]?.stringValue?.count, 3 << 19)
            XCTAssertEqual(try client.request(#"{"id":5,"op":"ping"}"#)["ok"], .bool(true))
        }
    }
}

/// This process's resident memory in MB (the in-process server's included), from /proc.
func residentMegabytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes / 1024
    }
    return 0
}
