import HearthJSON
import HearthServer
import XCTest

/// Bad input gets a clear error, loses nothing, and (except for an oversized line) leaves the
/// connection usable.
final class BadInputTests: XCTestCase {
    /// Sends `line`, expects an error with `code`, then checks that the connection still works.
    func assertError(
        _ c: TestClient, _ line: [UInt8], code: String, id: JSONValue = .null, contains text: String? = nil,
        file: StaticString = #filePath, lineNumber: UInt = #line
    ) throws {
        try c.sendRaw(line + [UInt8(ascii: "\n")])
        let response = try c.readResponse()
        XCTAssertEqual(response["ok"], .bool(false), file: file, line: lineNumber)
        XCTAssertEqual(response.errorCode, code, "\(response.jsonString)", file: file, line: lineNumber)
        XCTAssertEqual(response["id"], id, file: file, line: lineNumber)
        let message = response["error"]?["message"]?.stringValue ?? ""
        XCTAssertFalse(message.isEmpty, file: file, line: lineNumber)
        if let text { XCTAssertTrue(message.contains(text), "\(message)", file: file, line: lineNumber) }
        XCTAssertEqual(
            try c.request(#"{"op":"ping","id":"alive"}"#)["id"], .string("alive"), file: file, line: lineNumber)
    }

    func assertError(
        _ c: TestClient, _ line: String, code: String, id: JSONValue = .null, contains text: String? = nil,
        file: StaticString = #filePath, lineNumber: UInt = #line
    ) throws {
        try assertError(c, Array(line.utf8), code: code, id: id, contains: text, file: file, lineNumber: lineNumber)
    }

    func testMalformedLines() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try self.assertError(c, "not json", code: "bad_request", contains: "byte 1")
            try self.assertError(c, #"{"op":"get","path":"/"} trailing"#, code: "bad_request")
            try self.assertError(c, #"{"op":"get","path":"/""#, code: "bad_request")
            try self.assertError(c, "[1,2,3]", code: "bad_request", contains: "object")
            try self.assertError(c, "42", code: "bad_request", contains: "object")
            try self.assertError(c, #"{"op":"set","path":"/x","value":NaN}"#, code: "bad_request")
            try self.assertError(
                c, [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D], code: "bad_request", contains: "UTF-8")
            try self.assertError(
                c, [0x7B, 0x22, 0x6F, 0x70, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], code: "bad_request", contains: "byte 7"
            )
            // Blank lines and CRLF are fine.
            try c.sendRaw(Array("\n  \r\n{\"op\":\"ping\",\"id\":7}\r\n".utf8))
            XCTAssertEqual(try c.readResponse()["id"], .int(7))
        }
    }

    func testUnknownOpsAndMissingOrMistypedFields() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try self.assertError(
                c, #"{"op":"frobnicate","id":1}"#, code: "unknown_op", id: .int(1), contains: "frobnicate")
            try self.assertError(c, #"{"id":2}"#, code: "bad_request", id: .int(2), contains: "op")
            try self.assertError(c, #"{"op":5,"id":3}"#, code: "bad_request", id: .int(3))
            try self.assertError(c, #"{"op":"get","id":4}"#, code: "bad_request", id: .int(4), contains: "path")
            try self.assertError(
                c, #"{"op":"get","path":7,"id":5}"#, code: "bad_request", id: .int(5), contains: "path")
            try self.assertError(
                c, #"{"op":"set","path":"/a","id":6}"#, code: "bad_request", id: .int(6), contains: "value")
            try self.assertError(
                c, #"{"op":"update","path":"/a","values":[1],"id":7}"#, code: "bad_request", id: .int(7))
            try self.assertError(
                c, #"{"op":"transaction","path":"/a","value":1,"id":8}"#, code: "bad_request", id: .int(8))
            try self.assertError(
                c, #"{"op":"get","path":"/","shallow":"yes","id":9}"#, code: "bad_request", id: .int(9))
            try self.assertError(
                c, #"{"op":"onDisconnect","action":"explode","path":"/a","id":10}"#, code: "bad_request", id: .int(10))
            try self.assertError(c, #"{"op":"ping","id":{"x":1}}"#, code: "bad_request", contains: "id")
            try self.assertError(
                c, #"{"op":"setPriority","path":"/a","priority":true,"id":11}"#, code: "invalid_value", id: .int(11))
        }
    }

    func testInvalidKeysPathsAndValues() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            for bad in ["/a.b", "/a$b", "/a#b", "/a[b", "/a]b", "/a\\u0001b", "/a\\u007fb"] {
                try self.assertError(
                    c, #"{"op":"set","path":"\#(bad)","value":1,"id":"k"}"#, code: "invalid_path", id: .string("k"))
            }
            try self.assertError(
                c, #"{"op":"set","path":"/.info/x","value":1}"#, code: "invalid_path", contains: ".info")
            try self.assertError(c, #"{"op":"set","path":"/ok","value":{"a.b":1}}"#, code: "invalid_key")
            try self.assertError(c, #"{"op":"set","path":"/ok","value":{"a":{"b/c":1}}}"#, code: "invalid_key")
            try self.assertError(c, #"{"op":"set","path":"/ok","value":{".foo":1}}"#, code: "invalid_key")
            try self.assertError(c, #"{"op":"set","path":"/ok","value":{"":1}}"#, code: "invalid_key")
            let longKey = String(repeating: "k", count: 769)
            try self.assertError(
                c, #"{"op":"set","path":"/ok","value":{"\#(longKey)":1}}"#, code: "invalid_key", contains: "768")
            try self.assertError(c, #"{"op":"set","path":"/ok","value":{".value":1,"a":2}}"#, code: "invalid_value")
            try self.assertError(
                c, #"{"op":"set","path":"/ok","value":{".priority":true,"a":2}}"#, code: "invalid_value")
            try self.assertError(c, #"{"op":"set","path":"/ok","value":{".sv":"bogus"}}"#, code: "invalid_value")
            try self.assertError(
                c, #"{"op":"update","path":"/","values":{"a":1,"a/b":2}}"#, code: "invalid_path", contains: "ancestor")
            try self.assertError(c, #"{"op":"update","path":"/","values":{"a/b":1,"a//b":2}}"#, code: "invalid_path")
            // Nothing of the rejected writes was applied.
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/"}"#)["value"], .null)
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/"}"#)["rev"], .int(0))
        }
    }

    func testDepthLimits() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            func nested(_ depth: Int) -> String {
                String(repeating: #"{"k":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            }
            // A leaf at depth 32 is fine; 33 is not.
            XCTAssertEqual(try c.request(#"{"op":"set","path":"/a/b","value":\#(nested(30))}"#)["ok"], .bool(true))
            try self.assertError(c, #"{"op":"set","path":"/a/b","value":\#(nested(31))}"#, code: "too_deep")
            let deepPath = (0..<33).map { "p\($0)" }.joined(separator: "/")
            try self.assertError(c, #"{"op":"set","path":"/\#(deepPath)","value":1}"#, code: "too_deep")
            // Far beyond the parser's bound: rejected without harm.
            try self.assertError(c, #"{"op":"set","path":"/a","value":\#(nested(10_000))}"#, code: "too_deep")
        }
    }

    func testOversizedLineIsAnsweredAndCloses() async throws {
        try await withLiveServer(setting: \.maxMessageBytes, to: 4096) { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/kept","value":1}"#)
            let big = #"{"op":"set","path":"/big","value":""# + String(repeating: "x", count: 5000) + #""}"#
            try c.send(big)
            let response = try c.readResponse()
            XCTAssertEqual(response.errorCode, "too_large")
            XCTAssertEqual(response["id"], .null)
            XCTAssertTrue(c.waitForClose())
            let other = try TestClient(port: server.port)
            XCTAssertEqual(try other.request(#"{"op":"get","path":"/"}"#)["value"], json(#"{"kept":1}"#))
        }
    }

    func testOversizedStringIsRejected() async throws {
        try await withLiveServer(setting: \.limits.maxStringBytes, to: 100) { server in
            let c = try TestClient(port: server.port)
            let long = String(repeating: "é", count: 51)
            try self.assertError(c, #"{"op":"set","path":"/s","value":"\#(long)"}"#, code: "too_large", contains: "102")
        }
    }

    func testInvalidQueriesAndMalformedSecurityRequestsAreRefused() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try self.assertError(c, #"{"op":"get","path":"/","query":{"limitToFirst":0}}"#, code: "invalid_query")
            try self.assertError(
                c, #"{"op":"get","path":"/","query":{"orderBy":"$key","startAt":1}}"#, code: "invalid_query")
            try self.assertError(c, #"{"op":"subscribe","path":"/","query":{"bogus":1}}"#, code: "invalid_query")
            try self.assertError(c, #"{"op":"get","path":"/","query":[1]}"#, code: "invalid_query")
            try self.assertError(c, #"{"op":"auth"}"#, code: "bad_request", contains: "token")
            try self.assertError(c, #"{"op":"auth","token":""}"#, code: "bad_request", contains: "token")
            try self.assertError(c, #"{"op":"setRules","rules":7}"#, code: "bad_request", contains: "rules")
            try self.assertError(c, #"{"op":"setRules","rules":{"rules":{".read":"1 +"}}}"#, code: "invalid_rules")
            try self.assertError(c, #"{"op":"simulate","request":{"op":"ping"}}"#, code: "bad_request")
            try self.assertError(c, #"{"op":"simulate","as":5,"request":{"op":"get","path":"/"}}"#, code: "bad_request")
        }
    }

    func testPriorityPathsAcceptOnlyPriorities() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/p","value":1,"priority":3}"#)
            try self.assertError(c, #"{"op":"set","path":"/p/.priority","value":true}"#, code: "invalid_value")
            try self.assertError(
                c, #"{"op":"update","path":"/","values":{"p/.priority":{"x":1}}}"#, code: "invalid_value")
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/p","format":"export"}"#)["value"],
                json(#"{".value":1,".priority":3}"#))
            // A leaf one level below the maximum depth cannot be pushed under a full-depth path.
            let full = (0..<32).map { "d\($0)" }.joined(separator: "/")
            try self.assertError(c, #"{"op":"push","path":"/\#(full)","value":1}"#, code: "too_deep")
        }
    }

    func testHalfClosedClientStillGetsEveryAnswer() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            var lines = ""
            for i in 0..<300 { lines += #"{"op":"set","id":\#(i),"path":"/h/\#(i)","value":\#(i)}"# + "\n" }
            try c.sendRaw(Array(lines.utf8))
            c.shutdownWrite()
            for i in 0..<300 { XCTAssertEqual(try c.readResponse()["id"], .int(Int64(i))) }
            XCTAssertTrue(c.waitForClose())
        }
    }

    func testSlowConsumerIsDisconnected() async throws {
        try await withLiveServer(setting: \.maxOutboundBytes, to: 256 * 1024) { server in
            let writer = try TestClient(port: server.port)
            let big = String(repeating: "x", count: 512 * 1024)
            try writer.request(#"{"op":"set","path":"/big","value":"\#(big)"}"#)
            let slow = try TestClient(port: server.port)
            // Ask for far more than the socket buffers hold, and never read.
            let requests = String(repeating: #"{"op":"get","path":"/big"}"# + "\n", count: 200)
            try slow.sendRaw(Array(requests.utf8))
            // Sleep first so that the outbox fills, then drain what was sent until the close.
            try await Task.sleep(for: .milliseconds(500))
            var responses = 0
            var closed = false
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                do {
                    let line = try slow.readLine(timeout: 5)
                    if line.contains("\"ok\"") { responses += 1 }
                } catch {
                    closed = "\(error)".contains("closed") || "\(error)".contains("errno 104")
                    break
                }
            }
            XCTAssertTrue(closed, "the slow consumer was not disconnected")
            XCTAssertLessThan(responses, 200)
            // The server stays up for everyone else.
            XCTAssertEqual(try writer.request(#"{"op":"ping","id":1}"#)["ok"], .bool(true))
        }
    }
}
