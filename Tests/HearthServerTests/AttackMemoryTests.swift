import Foundation
import HearthJSON
import HearthTestSupport
import NIOConcurrencyHelpers
import NIOSSL
import XCTest

/// Attacks on the server's memory (docs/security.md): a few kilobytes of requests must not make
/// hearthd hold gigabytes. hearthd runs as its own process and its resident memory is read from
/// /proc while the attack runs; sampling stops (and the test fails) as soon as the bound is passed.
final class AttackMemoryTests: XCTestCase {
    /// A 10,000,000-character string value, the amplifier of the pipelined-read attacks.
    static let bigValue = "\"" + String(repeating: "x", count: 10_000_000) + "\""

    // MARK: Pipelined reads of a large value

    func testPipelinedReadsOfALargeValueStayWithinTheMemoryBudget() throws {
        let server = try AttackServer.start([("writeStallTimeoutSeconds", .int(3))])
        defer { server.stop() }
        try pipelinedReads(on: server, transport: .http(tls: nil), count: 200)
    }

    func testPipelinedReadsOverTLSBySignedInUserStayWithinTheMemoryBudget() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let token = try await testToken(uid: "mallory", now: Int64(Date().timeIntervalSince1970 * 1000))
        let rules = try temporaryFile(#"{"rules":{".read":"auth != null",".write":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let server = try AttackServer.start(
            Self.secureSettings(pki: pki, rules: rules) + [("writeStallTimeoutSeconds", .int(3))])
        defer { server.stop() }
        let context = try attackTLSContext(trusting: pki.path("ca.crt"))
        try pipelinedReads(
            on: server, transport: .http(tls: context), count: 150, reader: "?auth=\(token)",
            writer: "?auth=\(TestSecrets.admin)")
    }

    func testPipelinedLineProtocolReadsStayWithinTheMemoryBudget() throws {
        let server = try AttackServer.start([("writeStallTimeoutSeconds", .int(3))])
        defer { server.stop() }
        try pipelinedReads(on: server, transport: .line(tls: nil), count: 200)
    }

    func testPipelinedLineProtocolReadsOverTLSStayWithinTheMemoryBudget() throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let server = try AttackServer.start([
            ("tlsCertificate", .string(pki.path("server.crt"))), ("tlsKey", .string(pki.path("server.key"))),
            ("writeStallTimeoutSeconds", .int(3)),
        ])
        defer { server.stop() }
        try pipelinedReads(
            on: server, transport: .line(tls: try attackTLSContext(trusting: pki.path("ca.crt"))), count: 200)
    }

    enum Transport: Sendable {
        case http(tls: NIOSSLContext?)
        case line(tls: NIOSSLContext?)

        var tls: NIOSSLContext? {
            switch self {
            case .http(let tls), .line(let tls): tls
            }
        }
    }

    /// Stores the big value, then sends `count` pipelined reads of it on one connection that
    /// never reads. Promises: resident memory stays under its level before the attack + 150 MB;
    /// another client's small read is answered within 2 s meanwhile; the server closes the
    /// stalled connection (writeStallTimeoutSeconds 3), so draining it ends in end-of-stream.
    /// `reader` and `writer` are the credentials' query strings for HTTP.
    private func pipelinedReads(
        on server: AttackServer, transport: Transport, count: Int, reader: String = "", writer: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let port: Int
        let attack: String
        switch transport {
        case .http(let tls):
            port = server.httpPort
            let seed = try RawConnection(port: port, tls: tls)
            XCTAssertEqual(try seed.request("PUT", "/big.json\(writer)", body: Self.bigValue, timeout: 30).status, 200)
            XCTAssertEqual(try seed.request("PUT", "/small.json\(writer)", body: #""hi""#).status, 200)
            // One ordinary read of the big value first, so that the baseline holds what any read costs.
            XCTAssertEqual(
                try seed.request("GET", "/big.json\(writer)", timeout: 30).body.count, Self.bigValue.utf8.count)
            seed.close()
            attack = String(repeating: "GET /big.json\(reader) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: count)
        case .line(let tls):
            port = server.tcpPort
            let seed = try RawConnection(port: port, tls: tls)
            _ = try seed.readLine()
            try seed.send(#"{"id":1,"op":"set","path":"/big","value":\#(Self.bigValue)}"# + "\n", timeout: 30)
            XCTAssertTrue(try seed.readLine(timeout: 30).contains(#""ok":true"#))
            try seed.send(#"{"id":2,"op":"set","path":"/small","value":"hi"}"# + "\n")
            XCTAssertTrue(try seed.readLine().contains(#""ok":true"#))
            try seed.send(#"{"id":3,"op":"get","path":"/big"}"# + "\n")
            XCTAssertGreaterThan(try seed.readLine(timeout: 30).utf8.count, 10_000_000)
            seed.close()
            attack = (1...count).map { #"{"id":\#($0),"op":"get","path":"/big"}"# + "\n" }.joined()
        }
        let baseline = server.settledResidentMiB()

        // The attacker: everything in one go, then never a byte read.
        let attacker = try RawConnection(port: port, tls: transport.tls, receiveBuffer: 16384)
        if case .line = transport { _ = try attacker.readLine() }
        attacker.queue(Array(attack.utf8))
        let attackStart = Date()
        let sendDeadline = Date().addingTimeInterval(2)
        while !attacker.drained, Date() < sendDeadline { _ = try? attacker.pump(timeout: 0.05) }

        var smallRead: Background<String?>?
        let watch = server.watchMemory(
            baseline: baseline, margin: 150, seconds: 6,
            tick: { elapsed in
                guard elapsed >= 1, smallRead == nil else { return }
                smallRead = Background { Self.timedSmallRead(port: port, transport: transport, credential: reader) }
            })
        guard !watch.passed else {
            XCTFail(watch.describe("\(count) pipelined reads of a 10 MB value"), file: file, line: line)
            return
        }
        if let failure = smallRead.map({ $0.failure(within: 5) }) ?? "it was never started" {
            XCTFail("another client's small read during the attack: \(failure)", file: file, line: line)
        }
        // Closed after the stall timeout (3 s; by 8 s at the latest): what is left in the socket
        // buffers, then end-of-stream. Reading before then would be progress that keeps it open.
        Thread.sleep(until: attackStart.addingTimeInterval(8))
        let drained = attacker.drainUntilClosed(maxBytes: 64 << 20, timeout: 4)
        XCTAssertTrue(
            drained.closed,
            "the stalled connection is still open 8 s into the attack; read \(drained.bytes) bytes from it "
                + "without reaching its end",
            file: file, line: line)
    }

    /// A small read on a fresh connection: nil when answered right within 2 s, else what went wrong.
    private static func timedSmallRead(port: Int, transport: Transport, credential: String) -> String? {
        let start = Date()
        do {
            let connection = try RawConnection(port: port, tls: transport.tls, timeout: 3)
            defer { connection.close() }
            let answer: String
            switch transport {
            case .http:
                answer = try connection.request("GET", "/small.json\(credential)", timeout: 3).text
            case .line:
                _ = try connection.readLine(timeout: 3)
                try connection.send(#"{"id":1,"op":"get","path":"/small"}"# + "\n", timeout: 3)
                answer = try connection.readLine(timeout: 3)
            }
            let seconds = Date().timeIntervalSince(start)
            guard answer.contains(#""hi""#) else { return "answered \(answer.prefix(200))" }
            return seconds < 2 ? nil : String(format: "answered after %.1f s", seconds)
        } catch {
            return "\(error) after \(String(format: "%.1f", Date().timeIntervalSince(start))) s"
        }
    }

    // MARK: Request bodies

    /// 100 TLS connections, rules on, no credential, each announcing a 16 MiB body and sending it as
    /// fast as it can. Promises: each is refused (401 or 413) within 2 s of its head, without the
    /// body being read (resident memory stays under its level before + 100 MB); a signed-in user's
    /// 1 MiB write still works.
    func testUnauthenticatedBodiesAreRefusedBeforeTheyAreRead() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let token = try await testToken(uid: "alice", now: Int64(Date().timeIntervalSince1970 * 1000))
        let rules = try temporaryFile(#"{"rules":{".read":"auth != null",".write":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let server = try AttackServer.start(Self.secureSettings(pki: pki, rules: rules))
        defer { server.stop() }
        let context = try attackTLSContext(trusting: pki.path("ca.crt"))
        let port = server.httpPort
        let baseline = server.settledResidentMiB()

        let stop = Flag()
        let outcomes = NIOLockedValueBox<[String]>([])
        let finished = DispatchGroup()
        let head = "PUT /x.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 16777216\r\n\r\n"
        for _ in 0..<100 {
            finished.enter()
            Thread {
                defer { finished.leave() }
                let outcome = Self.sendBody(port: port, tls: context, head: head, bytes: 16 << 20, stop: stop)
                outcomes.withLockedValue { $0.append(outcome) }
            }.start()
        }
        let watch = server.watchMemory(
            baseline: baseline, margin: 100, seconds: 12, until: { outcomes.withLockedValue { $0.count } == 100 })
        stop.set()
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success, "the attacking threads did not stop")
        XCTAssertFalse(watch.passed, watch.describe("100 unauthenticated 16 MiB bodies over TLS"))
        let all = outcomes.withLockedValue { $0 }
        let refused = all.filter { $0.hasPrefix("refused") }
        XCTAssertEqual(
            refused.count, 100,
            "not promptly refused: "
                + Dictionary(grouping: all.filter { !$0.hasPrefix("refused") }, by: { $0 })
                .map { "\($0.value.count) × \($0.key)" }.joined(separator: "; "))

        let user = try RawConnection(port: port, tls: context)
        let body = "\"" + String(repeating: "a", count: 1 << 20) + "\""
        let answer = try user.request("PUT", "/alice.json?auth=\(token)", body: body, timeout: 15)
        XCTAssertEqual(answer.status, 200, answer.text.prefix(200).description)
    }

    /// The same attack on the line protocol's TLS port: 100 connections that have not signed in
    /// each send one 16 MiB line as fast as they can. Promises: each gets a `too_large` error
    /// event within 5 s, before its line is read whole, and resident memory stays under its level
    /// before + 400 MB. A line is refused only once more than the 256 KiB bound of it has arrived,
    /// so each connection holds what a few reads bring in (its TLS buffers included) before it is
    /// cut: a few megabytes at the most, where unbounded it was all of its 16 MiB.
    func testUnauthenticatedLongLinesAreRefusedBeforeTheyAreRead() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let rules = try temporaryFile(#"{"rules":{".read":"auth != null",".write":"auth != null"}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        let server = try AttackServer.start(Self.secureSettings(pki: pki, rules: rules))
        defer { server.stop() }
        let context = try attackTLSContext(trusting: pki.path("ca.crt"))
        let baseline = server.settledResidentMiB()
        let port = server.tcpPort
        let outcomes = NIOLockedValueBox<[String]>([])
        let finished = DispatchGroup()
        for _ in 0..<100 {
            finished.enter()
            Thread {
                defer { finished.leave() }
                let outcome = Self.sendLine(port: port, tls: context, bytes: 16 << 20)
                outcomes.withLockedValue { $0.append(outcome) }
            }.start()
        }
        let watch = server.watchMemory(
            baseline: baseline, margin: 400, seconds: 12, until: { outcomes.withLockedValue { $0.count } == 100 })
        XCTAssertEqual(finished.wait(timeout: .now() + 15), .success, "the attacking threads did not stop")
        XCTAssertFalse(watch.passed, watch.describe("100 unauthenticated 16 MiB lines over TLS"))
        let all = outcomes.withLockedValue { $0 }
        XCTAssertEqual(
            all.filter { $0 == "refused" }.count, 100,
            Dictionary(grouping: all.filter { $0 != "refused" }, by: { $0 }).map { "\($0.value.count) × \($0.key)" }
                .joined(separator: "; "))
    }

    /// Reads the hello, then sends one line of up to `bytes` (no end) as fast as the server takes
    /// it until the server says something: "refused" when that is a `too_large` error event
    /// within 5 s, else what happened.
    private static func sendLine(port: Int, tls: NIOSSLContext?, bytes: Int) -> String {
        let connection: RawConnection
        do { connection = try RawConnection(port: port, tls: tls, timeout: 10) } catch {
            return "no connection: \(error)"
        }
        defer { connection.close() }
        let chunk =
            Array(#"{"op":"set","path":"/x","value":""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 65536)
        var sent = 0
        let start = Date()
        do {
            _ = try connection.readLine(timeout: 10)  // hello
            while Date().timeIntervalSince(start) < 10 {
                if connection.drained, sent < bytes {
                    connection.queue(sent == 0 ? chunk : Array(chunk.suffix(65536)))
                    sent += 65536
                }
                if try connection.pump(timeout: 0.05, answersFirst: true) { break }
            }
            let line = try connection.readLine(timeout: 5)
            let seconds = Date().timeIntervalSince(start)
            guard line.contains("too_large"), seconds < 5 else {
                return "answered \(line.prefix(80)) after \(seconds) s"
            }
            return "refused"
        } catch {
            return "\(error) after \(sent >> 20) MiB"
        }
    }

    /// Sends `head` then up to `bytes` of body as fast as the server takes them, until it answers,
    /// closes, or `stop`: "refused <status> in <s>" when the answer was 401 or 413 within 2 s of the
    /// head, else what happened.
    private static func sendBody(port: Int, tls: NIOSSLContext?, head: String, bytes: Int, stop: Flag) -> String {
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 65536)
        let connection: RawConnection
        do { connection = try RawConnection(port: port, tls: tls, timeout: 10) } catch {
            return "no connection: \(error)"
        }
        defer { connection.close() }
        var sent = 0
        let start = Date()
        do {
            try connection.send(head)
            while !stop.isSet, Date().timeIntervalSince(start) < 10 {
                if connection.drained, sent < bytes {
                    connection.queue(chunk)
                    sent += chunk.count
                }
                if try connection.pump(timeout: 0.05, answersFirst: true) { break }
            }
            guard !stop.isSet || connection.hasIncoming(within: 0) else {
                return "no answer after \(sent >> 20) MiB of body"
            }
            let answer = try connection.readAnswer(timeout: 2)
            let seconds = Date().timeIntervalSince(start)
            guard [401, 413].contains(answer.status), seconds < 2 else {
                return "answered \(answer.status) after \(Int(seconds)) s and \(sent >> 20) MiB"
            }
            return "refused \(answer.status)"
        } catch {
            // A reset while sending: the answer may still be waiting in the socket.
            let seconds = Date().timeIntervalSince(start)
            if let answer = try? connection.readAnswer(timeout: 0.5), [401, 413].contains(answer.status), seconds < 2 {
                return "refused \(answer.status)"
            }
            return "\(error) after \(Int(seconds)) s and \(sent >> 20) MiB"
        }
    }

    // MARK: Event streams

    /// 40 event streams that never read while a writer changes their data with 64 KB values 200
    /// times a second. Promises: resident memory stays under its level before + maxBufferedBytes
    /// (64 MiB here) + 150 MB; streams are cut (at least one ends).
    func testEventStreamsThatNeverReadStayWithinTheTotalBudget() throws {
        // The change log keeps 100 revisions here: what it holds is bounded by its own setting, and
        // this test is about what the server holds for clients.
        let server = try AttackServer.start([("maxBufferedBytes", .int(64 << 20)), ("changeLogRevisions", .int(100))])
        defer { server.stop() }
        let seed = try RawConnection(port: server.httpPort)
        XCTAssertEqual(try seed.request("PUT", "/feed.json", body: #"{"x":"start"}"#).status, 200)
        seed.close()
        let baseline = server.settledResidentMiB()

        var streams: [RawConnection] = []
        for _ in 0..<40 {
            let stream = try RawConnection(port: server.httpPort, receiveBuffer: 16384)
            try stream.send(RawConnection.requestText("GET", "/feed.json", headers: [("Accept", "text/event-stream")]))
            streams.append(stream)
        }
        let stop = Flag()
        let tcpPort = server.tcpPort
        let writer = Background { () -> String? in
            do {
                let client = try RawConnection(port: tcpPort)
                _ = try client.readLine()
                let filler = String(repeating: "y", count: 65_000)
                let start = Date()
                var n = 0
                while !stop.isSet, Date().timeIntervalSince(start) < 8 {
                    n += 1
                    try client.send(#"{"id":\#(n),"op":"set","path":"/feed/x","value":"\#(n)\#(filler)"}"# + "\n")
                    _ = try client.readLine(timeout: 5)
                    // 200 writes a second at most.
                    let due = start.addingTimeInterval(Double(n) / 200)
                    if due > Date() { Thread.sleep(until: due) }
                }
                return nil
            } catch {
                return "the writer failed: \(error)"
            }
        }
        let watch = server.watchMemory(baseline: baseline, margin: 64 + 150, seconds: 8.5, until: { stop.isSet })
        stop.set()
        XCTAssertFalse(watch.passed, watch.describe("40 event streams that never read, 64 KB writes at 200/s"))
        if let failure = writer.failure(within: 6) { XCTFail("the writer: \(failure)") }
        guard !watch.passed else { return }
        let ended = NIOLockedValueBox(0)
        let connections = streams
        try concurrently(connections.count) { i in
            if connections[i].drainWhileBusy(idle: 1, maxBytes: 96 << 20).closed { ended.withLockedValue { $0 += 1 } }
        }
        XCTAssertGreaterThan(ended.withLockedValue { $0 }, 0, "no stream was cut")
    }

    /// TLS with the test PKI, the rules file, the admin secret and the HS256 key.
    static func secureSettings(pki: TestPKI, rules: String) -> [(String, JSONValue)] {
        [
            ("tlsCertificate", .string(pki.path("server.crt"))), ("tlsKey", .string(pki.path("server.key"))),
            ("rulesFile", .string(rules)), ("adminSecrets", .array([.string(TestSecrets.admin)])),
            ("jwtSecret", .string(TestSecrets.jwt)),
        ]
    }
}
