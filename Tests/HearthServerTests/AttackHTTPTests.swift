import Foundation
import HearthJSON
import HearthTestSupport
import NIOConcurrencyHelpers
import XCTest

/// Attacks about time and truth rather than memory: request bodies and TLS handshakes that never
/// finish, answers lost behind a malformed request, web pages writing to a local server in open
/// mode, and HTTP/1.1 forms the server must understand (docs/security.md, docs/REST.md).
final class AttackHTTPTests: XCTestCase {
    // MARK: Bodies that never arrive

    func testARequestBodyThatNeverArrivesIsCutOff() throws {
        let server = try AttackServer.start([
            ("firstRequestTimeoutSeconds", .int(2)), ("minBodyBytesPerSecond", .int(1024)),
        ])
        defer { server.stop() }
        let connection = try RawConnection(port: server.httpPort)
        try connection.send("PUT /slow.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n")
        if let failure = Self.cutOff(connection, within: 15) { XCTFail(failure) }
    }

    func testFiftyRequestBodiesThatNeverArriveAreAllCutOff() throws {
        let server = try AttackServer.start([
            ("firstRequestTimeoutSeconds", .int(2)), ("minBodyBytesPerSecond", .int(1024)),
        ])
        defer { server.stop() }
        var connections: [RawConnection] = []
        for _ in 0..<50 {
            let connection = try RawConnection(port: server.httpPort)
            try connection.send("PUT /slow.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n")
            connections.append(connection)
        }
        let deadline = Date().addingTimeInterval(15)
        let failures = NIOLockedValueBox<[String]>([])
        let all = connections
        try concurrently(all.count) { i in
            if let failure = Self.cutOff(all[i], within: deadline.timeIntervalSinceNow) {
                failures.withLockedValue { $0.append(failure) }
            }
        }
        let found = failures.withLockedValue { $0 }
        XCTAssertTrue(found.isEmpty, "\(found.count) of 50: \(found.first ?? "")")
    }

    /// Nil when the server answers 408 or nothing, then closes, within `timeout`; else what it did.
    private static func cutOff(_ connection: RawConnection, within timeout: Double) -> String? {
        let start = Date()
        guard connection.hasIncoming(within: timeout) else {
            return "the connection is still open \(Int(timeout)) s after a head announcing a body that never came"
        }
        if let answer = try? connection.readAnswer(timeout: 2), answer.status != 408 {
            return "answered \(answer.status) instead of 408 or closing"
        }
        let rest = max(0.5, timeout - Date().timeIntervalSince(start))
        return connection.drainUntilClosed(maxBytes: 1 << 20, timeout: rest).closed
            ? nil : "answered, but the connection was not closed"
    }

    // MARK: Handshakes that never finish

    /// Nothing, or a ClientHello and then nothing, on either TLS port: the server closes the
    /// connection within about 10 s by default (and `firstRequestTimeoutSeconds` is 2 here).
    func testStalledTLSHandshakesAreClosedOnBothPorts() throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let server = try AttackServer.start([
            ("tlsCertificate", .string(pki.path("server.crt"))), ("tlsKey", .string(pki.path("server.key"))),
            ("firstRequestTimeoutSeconds", .int(2)),
        ])
        defer { server.stop() }
        let hello = try RawConnection.clientHello(attackTLSContext(trusting: pki.path("ca.crt")))
        var stalled: [(String, RawConnection)] = []
        for (name, port) in [("line", server.tcpPort), ("HTTP", server.httpPort)] {
            stalled.append(("\(name) port, nothing sent", try RawConnection(port: port)))
            let afterHello = try RawConnection(port: port)
            try afterHello.send(hello)
            stalled.append(("\(name) port, a ClientHello sent", afterHello))
        }
        let deadline = Date().addingTimeInterval(15)
        let stillOpen = NIOLockedValueBox<[String]>([])
        let all = stalled
        try concurrently(all.count) { i in
            if !all[i].1.drainUntilClosed(maxBytes: 1 << 20, timeout: deadline.timeIntervalSinceNow).closed {
                stillOpen.withLockedValue { $0.append(all[i].0) }
            }
        }
        let open = stillOpen.withLockedValue { $0 }
        XCTAssertTrue(open.isEmpty, "stalled handshakes still open after 15 s: \(open.sorted())")
    }

    // MARK: Every applied request gets its answer

    /// A push pipelined with a malformed request: the push's own answer (200 with its name), then
    /// the 400, then the end; one child stored. A push with `Connection: close` followed by junk:
    /// the 200 alone, then the end.
    func testACommittedWriteGetsItsTrueAnswerBeforeAnyError() throws {
        let server = try AttackServer.start()
        defer { server.stop() }
        let port = server.httpPort
        let push = { (path: String, extra: String) in
            RawConnection.requestText(
                "POST", "/\(path).json", body: #"{"item":"tea"}"#,
                headers: [("Content-Type", "application/json")] + (extra.isEmpty ? [] : [("Connection", extra)]))
        }
        let cases: [(path: String, text: String, malformed: Bool)] = [
            ("orders", push("orders", "") + "GARBAGE\r\n\r\n", true),
            ("orders2", push("orders2", "") + "GET /x.json HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\n\r\n", true),
            ("orders3", push("orders3", "close") + "trailing junk \u{1}\u{2}\r\n\r\n", false),
        ]
        for (path, text, malformed) in cases {
            let connection = try RawConnection(port: port)
            try connection.send(text)
            do {
                let first = try connection.readAnswer(timeout: 3)
                XCTAssertEqual(first.status, 200, "\(path): the first answer is \(first.status) \(first.text)")
                let name = (try? JSONParser.parse(first.body))?["name"]?.stringValue
                XCTAssertNotNil(name, "\(path): the first answer's body is \(first.text), not the push's name")
                if malformed {
                    let second = try connection.readAnswer(timeout: 3)
                    XCTAssertEqual(second.status, 400, "\(path): the second answer")
                }
                let rest = connection.drainUntilClosed(maxBytes: 1 << 20, timeout: 3)
                XCTAssertTrue(rest.closed, "\(path): not closed after the answers")
                XCTAssertEqual(rest.bytes, 0, "\(path): \(rest.bytes) bytes more than the answers expected")
            } catch {
                XCTFail("\(path): \(error)")
            }
            let stored = try RawConnection(port: port).request("GET", "/\(path).json")
            XCTAssertEqual(
                (try? JSONParser.parse(stored.body))?.objectMembers?.count, 1, "\(path) holds \(stored.text)")
        }
    }

    // MARK: Open mode and browsers

    static let evil = ("Origin", "https://evil.example")

    /// A new connection per request: a refusal may close it.
    private static func ask(
        _ server: AttackServer, _ method: String, _ target: String, body: String? = nil,
        headers: [(String, String)] = []
    ) throws -> RawConnection.Answer {
        let connection = try RawConnection(port: server.httpPort)
        defer { connection.close() }
        return try connection.request(method, target, body: body, headers: headers, timeout: 5)
    }

    func testOpenModeRefusesWritesFromAForeignOrigin() throws {
        let server = try AttackServer.start([("allowedOrigins", .array(["https://app.example"]))])
        defer { server.stop() }
        XCTAssertEqual(try Self.ask(server, "PUT", "/keep.json", body: #""data""#).status, 200)

        let overridden = try Self.ask(
            server, "POST", "/t.json?x-http-method-override=PUT", body: #""pwned""#,
            headers: [Self.evil, ("Content-Type", "text/plain")])
        XCTAssertEqual(overridden.status, 403, "a simple cross-origin POST overriding to PUT")
        XCTAssertNotEqual(overridden.header("Access-Control-Allow-Origin"), "*")
        XCTAssertEqual(try Self.ask(server, "GET", "/t.json").text, "null")

        let delete = try Self.ask(server, "DELETE", "/keep.json", headers: [Self.evil])
        XCTAssertEqual(delete.status, 403, "a cross-origin DELETE")
        XCTAssertEqual(try Self.ask(server, "GET", "/keep.json").text, #""data""#)

        let rules = try Self.ask(
            server, "PUT", "/.settings/rules.json", body: #"{"rules":{".read":false,".write":false}}"#,
            headers: [Self.evil, ("Content-Type", "text/plain")])
        XCTAssertEqual(rules.status, 403, "cross-origin rules")
        // Still open mode: anyone without an Origin may write.
        XCTAssertEqual(try Self.ask(server, "PUT", "/after.json", body: "1").status, 200)
        XCTAssertEqual(try Self.ask(server, "GET", "/keep.json").text, #""data""#)
    }

    func testOpenModeRefusesReadsAndPreflightsFromAForeignOrigin() throws {
        let server = try AttackServer.start([("allowedOrigins", .array(["https://app.example"]))])
        defer { server.stop() }
        XCTAssertEqual(try Self.ask(server, "PUT", "/keep.json", body: #""secret-data""#).status, 200)

        let read = try Self.ask(server, "GET", "/keep.json", headers: [Self.evil])
        XCTAssertEqual(read.status, 403, "a cross-origin read")
        XCTAssertFalse(read.text.contains("secret-data"), read.text)

        let preflight = try Self.ask(
            server, "OPTIONS", "/keep.json",
            headers: [
                Self.evil, ("Access-Control-Request-Method", "PUT"), ("Access-Control-Request-Headers", "content-type"),
            ])
        XCTAssertEqual(preflight.status, 403, "a cross-origin preflight")
        let allows = preflight.headers.filter { $0.0.lowercased().hasPrefix("access-control-allow") }
        XCTAssertTrue(allows.isEmpty, "a refused preflight allows \(allows)")
    }

    func testOpenModeServesClientsWithoutAnOriginAndAllowedOrigins() throws {
        let server = try AttackServer.start([("allowedOrigins", .array(["https://app.example"]))])
        defer { server.stop() }
        // Firebase's REST clients and curl send no Origin.
        XCTAssertEqual(try Self.ask(server, "PUT", "/plain.json", body: "1").status, 200)
        XCTAssertEqual(try Self.ask(server, "GET", "/plain.json").text, "1")
        // Local development servers, the server's own console, and configured origins.
        for origin in ["http://localhost:3000", "http://127.0.0.1:\(server.httpPort)", "https://app.example"] {
            let write = try Self.ask(
                server, "PUT", "/ok.json", body: #""\#(origin)""#,
                headers: [("Origin", origin), ("Content-Type", "application/json")])
            XCTAssertEqual(write.status, 200, origin)
            XCTAssertEqual(write.header("Access-Control-Allow-Origin"), origin)
            let read = try Self.ask(server, "GET", "/ok.json", headers: [("Origin", origin)])
            XCTAssertEqual(read.status, 200, origin)
            XCTAssertEqual(read.text, #""\#(origin)""#)
            XCTAssertEqual(read.header("Access-Control-Allow-Origin"), origin)
        }
    }

    /// DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 is same-origin
    /// to the browser; only the Host header tells.
    func testOpenModeRefusesAHostThatIsNotLoopback() throws {
        let server = try AttackServer.start()
        defer { server.stop() }
        let port = server.httpPort
        XCTAssertEqual(try Self.ask(server, "PUT", "/keep.json", body: #""data""#).status, 200)
        let read = try Self.ask(server, "GET", "/keep.json", headers: [("Host", "evil.example:\(port)")])
        XCTAssertEqual(read.status, 403, "a read for Host evil.example")
        XCTAssertFalse(read.text.contains("data"), read.text)
        let write = try Self.ask(
            server, "PUT", "/keep.json", body: #""rebound""#, headers: [("Host", "evil.example:\(port)")])
        XCTAssertEqual(write.status, 403, "a write for Host evil.example")
        XCTAssertEqual(try Self.ask(server, "GET", "/keep.json").text, #""data""#)
        // Loopback names stay served.
        XCTAssertEqual(try Self.ask(server, "GET", "/keep.json", headers: [("Host", "localhost:\(port)")]).status, 200)
    }

    func testWithRulesInForceForeignOriginsAreLeftToTheRules() throws {
        let rules = try temporaryFile(#"{"rules":{".read":true,".write":true}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let server = try AttackServer.start([("rulesFile", .string(rules))])
        defer { server.stop() }
        let write = try Self.ask(
            server, "PUT", "/shared.json", body: "1", headers: [Self.evil, ("Content-Type", "text/plain")])
        XCTAssertEqual(write.status, 200)
        XCTAssertEqual(write.header("Access-Control-Allow-Origin"), "*")
        let read = try Self.ask(server, "GET", "/shared.json", headers: [Self.evil])
        XCTAssertEqual(read.text, "1")
        XCTAssertEqual(read.header("Access-Control-Allow-Origin"), "*")
    }

    // MARK: HTTP/1.1 as written

    func testAnAbsoluteFormTargetWritesToItsPath() throws {
        let server = try AttackServer.start()
        defer { server.stop() }
        XCTAssertEqual(try Self.ask(server, "PUT", "http://localhost/abs.json", body: #""v""#).status, 200)
        XCTAssertEqual(try Self.ask(server, "GET", "/abs.json").text, #""v""#)
        XCTAssertEqual(try Self.ask(server, "GET", "/http:/localhost/abs.json").text, "null")
    }

    func testHeadOfAnEventStreamIsAHeadWithoutAStream() throws {
        let server = try AttackServer.start()
        defer { server.stop() }
        XCTAssertEqual(try Self.ask(server, "PUT", "/x.json", body: "1").status, 200)
        let connection = try RawConnection(port: server.httpPort)
        try connection.send(RawConnection.requestText("HEAD", "/x.json", headers: [("Accept", "text/event-stream")]))
        let head = try connection.readAnswer(method: "HEAD", timeout: 3)
        XCTAssertEqual(head.status, 200)
        XCTAssertFalse(connection.hasIncoming(within: 0.5), "bytes after the head of a HEAD answer")
        do {
            let next = try connection.request("GET", "/x.json", timeout: 3)
            XCTAssertEqual(next.text, "1", "the next request on the connection")
        } catch {
            XCTFail("the next request on the connection: \(error)")
        }
    }

    func testExpectContinueIsAnsweredBeforeTheBody() throws {
        let server = try AttackServer.start()
        defer { server.stop() }
        let connection = try RawConnection(port: server.httpPort)
        let body = #""continued""#
        try connection.send(
            "PUT /cont.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Expect: 100-continue\r\n\r\n")
        do {
            let interim = try connection.readHead(timeout: 1)
            XCTAssertEqual(interim.status, 100)
        } catch {
            XCTFail("no interim answer within 1 s: \(error)")
        }
        try connection.send(body)
        XCTAssertEqual(try connection.readAnswer(timeout: 3).status, 200)
        XCTAssertEqual(try Self.ask(server, "GET", "/cont.json").text, body)
    }

    func testAContentLengthBeyondSixtyThreeBitsIsRefusedAtOnce() throws {
        let server = try AttackServer.start()
        defer { server.stop() }
        for length in ["18446744073709551616", "9223372036854775808"] {
            let connection = try RawConnection(port: server.httpPort)
            try connection.send("PUT /huge.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(length)\r\n\r\n")
            do {
                let answer = try connection.readAnswer(timeout: 2)
                XCTAssertTrue([400, 413].contains(answer.status), "Content-Length \(length): \(answer.status)")
            } catch {
                XCTFail("Content-Length \(length): \(error)")
            }
        }
    }
}
