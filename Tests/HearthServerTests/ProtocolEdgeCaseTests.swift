import Foundation
import HearthJSON
import HearthServer
import Logging
import XCTest

/// Edge cases of the protocol found by a fuzzing client (issue #16): a trailing `.priority` and
/// the depth limit, a line end split across packets, and the `slow_consumer` event.
final class ProtocolEdgeCaseTests: XCTestCase {
    /// `/p0/…/p31`: a path of exactly `maxDepth` (32) segments.
    let fullDepth = "/" + (0..<32).map { "p\($0)" }.joined(separator: "/")

    func testTrailingPriorityDoesNotCountTowardsTheDepth() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let path = self.fullDepth
            XCTAssertEqual(try c.request(#"{"op":"set","path":"\#(path)","value":1}"#)["ok"], .bool(true))
            // set, update and setPriority at the same 32-segment node all work.
            var response = try c.request(#"{"op":"set","path":"\#(path)/.priority","value":5}"#)
            XCTAssertEqual(response["ok"], .bool(true), response.jsonString)
            response = try c.request(#"{"op":"update","path":"/p0","values":{"\#(path.dropFirst(4))/.priority":6}}"#)
            XCTAssertEqual(response["ok"], .bool(true), response.jsonString)
            response = try c.request(#"{"op":"get","path":"\#(path)","format":"export"}"#)
            XCTAssertEqual(response["value"], json(#"{".value":1,".priority":6}"#))
            response = try c.request(#"{"op":"setPriority","path":"\#(path)","priority":7}"#)
            XCTAssertEqual(response["ok"], .bool(true), response.jsonString)
            // A server value as the priority is resolved, not left at its placeholder.
            response = try c.request(#"{"op":"set","path":"\#(path)/.priority","value":{".sv":"timestamp"}}"#)
            XCTAssertEqual(response["ok"], .bool(true), response.jsonString)
            response = try c.request(#"{"op":"get","path":"\#(path)","format":"export"}"#)
            let priority = try XCTUnwrap(response["value"]?[".priority"]?.int64Value, response.jsonString)
            XCTAssertGreaterThan(priority, 1_600_000_000_000)
            // One segment more is still too deep, with or without `.priority`.
            response = try c.request(#"{"op":"set","path":"\#(path)/p32/.priority","value":5}"#)
            XCTAssertEqual(response.errorCode, "too_deep", response.jsonString)
            response = try c.request(#"{"op":"update","path":"\#(path)","values":{"p32/.priority":5}}"#)
            XCTAssertEqual(response.errorCode, "too_deep", response.jsonString)
        }
    }

    /// A request line of exactly `length` bytes (without its line end).
    func line(ofLength length: Int, id: Int) -> [UInt8] {
        let head = #"{"op":"set","id":\#(id),"path":"/x","value":""#
        let tail = #""}"#
        return Array((head + String(repeating: "x", count: length - head.utf8.count - tail.utf8.count) + tail).utf8)
    }

    func testCarriageReturnSplitFromItsNewlineIsNotCounted() async throws {
        try await withLiveServer(setting: \.maxMessageBytes, to: 1024) { server in
            let c = try TestClient(port: server.port)
            // Exactly maxMessageBytes, with `\r` in one packet and `\n` in the next.
            try c.sendRaw(self.line(ofLength: 1024, id: 1) + [UInt8(ascii: "\r")])
            try await Task.sleep(for: .milliseconds(200))
            try c.sendRaw([UInt8(ascii: "\n")])
            var response = try c.readResponse()
            XCTAssertEqual(response["ok"], .bool(true), response.jsonString)
            XCTAssertEqual(response["id"], .int(1))
            // The same bytes in one packet, as before.
            try c.sendRaw(self.line(ofLength: 1024, id: 2) + Array("\r\n".utf8))
            response = try c.readResponse()
            XCTAssertEqual(response["ok"], .bool(true), response.jsonString)
            // A `\r` followed by more of the line counts: 1024 bytes, `\r`, then `x`, is too long.
            try c.sendRaw(self.line(ofLength: 1024, id: 3) + [UInt8(ascii: "\r")])
            try await Task.sleep(for: .milliseconds(200))
            try c.sendRaw(Array("x\n".utf8))
            response = try c.readResponse()
            XCTAssertEqual(response.errorCode, "too_large", response.jsonString)
            XCTAssertTrue(c.waitForClose())
        }
    }

    func testOneByteTooLongIsRefusedWhateverThePackets() async throws {
        try await withLiveServer(setting: \.maxMessageBytes, to: 1024) { server in
            let c = try TestClient(port: server.port)
            try c.sendRaw(self.line(ofLength: 1025, id: 1) + [UInt8(ascii: "\r")])
            try await Task.sleep(for: .milliseconds(200))
            try c.sendRaw([UInt8(ascii: "\n")])
            XCTAssertEqual(try c.readResponse().errorCode, "too_large")
        }
    }

    func testSlowConsumerReceivesItsErrorEventBeforeTheClose() async throws {
        try await withLiveServer(setting: \.maxOutboundBytes, to: 256 * 1024) { server in
            let writer = try TestClient(port: server.port)
            let big = String(repeating: "x", count: 512 * 1024)
            try writer.request(#"{"op":"set","path":"/big","value":"\#(big)"}"#)
            let slow = try TestClient(port: server.port)
            // Ask for far more than the socket buffers hold, and read nothing for a while.
            let requests = String(repeating: #"{"op":"get","path":"/big"}"# + "\n", count: 200)
            try slow.sendRaw(Array(requests.utf8))
            try await Task.sleep(for: .milliseconds(500))
            var lines: [String] = []
            var closed = false
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                do {
                    lines.append(try slow.readLine(timeout: 5))
                } catch {
                    closed = "\(error)".contains("closed")
                    break
                }
            }
            XCTAssertTrue(closed, "the slow consumer was not disconnected in order")
            // Whole responses, then the error event, last.
            let last = try XCTUnwrap(lines.last)
            XCTAssertEqual(json(last)["event"], .string("error"), String(last.prefix(200)))
            XCTAssertEqual(json(last).errorCode, "slow_consumer")
            for line in lines.dropLast() { XCTAssertEqual(json(line)["ok"], .bool(true)) }
            XCTAssertLessThan(lines.count - 1, 200)
            XCTAssertEqual(try writer.request(#"{"op":"ping","id":1}"#)["ok"], .bool(true))
        }
    }
}
