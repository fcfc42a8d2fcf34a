import HearthFunctions
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import XCTest

/// Real HTTP round trips over loopback: a test sender signs as Hearth does and reads the answer.
final class FunctionsServerTests: XCTestCase {
    private let secret = "whsec-server-test"

    /// One raw HTTP/1.1 request on its own connection; returns the status code and body.
    private func send(
        port: Int, method: String = "POST", path: String = "/hook", body: [UInt8],
        headers: [(String, String)]
    ) async throws -> (status: Int, body: String) {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        request += "Content-Length: \(body.count)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let raw = try await RawHTTP.exchange(port: port, bytes: Array(request.utf8) + body)
        let text = String(decoding: raw, as: UTF8.self)
        let statusLine = text.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            XCTFail("no status line in \(text)")
            return (0, text)
        }
        let answer = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, answer)
    }

    private func deliver(
        port: Int, _ json: String, secret: String? = nil, at time: Int64? = nil
    ) async throws -> (
        status: Int, body: String
    ) {
        let body = Array(json.utf8)
        let signature = SignatureVerifier.signatureHeader(
            body: body, secret: Array((secret ?? self.secret).utf8),
            timestamp: time ?? SignatureVerifier.currentTime())
        return try await send(
            port: port, body: body,
            headers: [
                ("Content-Type", "application/json"), ("Hearth-Event-Id", "e1"), ("Hearth-Signature", signature),
            ])
    }

    private func startServer(
        _ functions: Functions, maxBodyBytes: Int = 1 << 20, idleTimeout: TimeAmount = .seconds(60)
    ) async throws -> (FunctionsServer, Int) {
        let server = FunctionsServer(
            functions: functions, verifier: SignatureVerifier(secret: secret),
            configuration: .init(
                port: 0, path: "/hook", maxBodyBytes: maxBodyBytes, requestTimeout: .seconds(2),
                idleTimeout: idleTimeout))
        let port = try await server.start()
        return (server, port)
    }

    func testVerifiedDeliveryReachesTheHandlerAndIsAnswered200() async throws {
        let functions = Functions()
        let received = NIOLockedValueBox<[TriggerEvent]>([])
        functions.onCreate("/messages/{id}") { event in received.withLockedValue { $0.append(event) } }
        let (server, port) = try await startServer(functions)
        defer { Task { try? await server.stop() } }

        let answer = try await deliver(port: port, DispatchTests.eventJSON())
        XCTAssertEqual(answer.status, 200, answer.body)
        let events = received.withLockedValue { $0 }
        XCTAssertEqual(events.map(\.id), ["e1"])
        XCTAssertEqual(events.first?.params, ["id": "m1"])
        XCTAssertEqual(events.first?.after["text"], .string("hi"))

        // At least once: the same event again reaches the handler again.
        let again = try await deliver(port: port, DispatchTests.eventJSON())
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(received.withLockedValue { $0.count }, 2)

        // No handler for it: still a delivery.
        let unmatched = try await deliver(port: port, DispatchTests.eventJSON(kind: "delete"))
        XCTAssertEqual(unmatched.status, 200)
        XCTAssertEqual(received.withLockedValue { $0.count }, 2)
        try await server.stop()
    }

    func testRefusedDeliveriesReachNoHandler() async throws {
        let functions = Functions()
        let calls = NIOLockedValueBox(0)
        functions.onWrite("/messages/{id}") { _ in calls.withLockedValue { $0 += 1 } }
        let (server, port) = try await startServer(functions, maxBodyBytes: 4096)
        defer { Task { try? await server.stop() } }
        let json = DispatchTests.eventJSON()
        let body = Array(json.utf8)
        let good = SignatureVerifier.signatureHeader(
            body: body, secret: Array(secret.utf8), timestamp: SignatureVerifier.currentTime())

        let wrongSecret = try await deliver(port: port, json, secret: "not-the-secret")
        XCTAssertEqual(wrongSecret.status, 400)
        let stale = try await deliver(port: port, json, at: SignatureVerifier.currentTime() - 3600)
        XCTAssertEqual(stale.status, 400)
        let tampered = try await send(
            port: port, body: Array(json.replacingOccurrences(of: "\"hi\"", with: "\"ho\"").utf8),
            headers: [("Content-Type", "application/json"), ("Hearth-Signature", good)])
        XCTAssertEqual(tampered.status, 400)
        let unsigned = try await send(port: port, body: body, headers: [("Content-Type", "application/json")])
        XCTAssertEqual(unsigned.status, 400)
        let notAnEvent = try await deliver(port: port, #"{"hello":"world"}"#)
        XCTAssertEqual(notAnEvent.status, 400)
        let otherID = try await send(
            port: port, body: body,
            headers: [("Content-Type", "application/json"), ("Hearth-Signature", good), ("Hearth-Event-Id", "e2")])
        XCTAssertEqual(otherID.status, 400)
        let text = try await send(
            port: port, body: body, headers: [("Content-Type", "text/plain"), ("Hearth-Signature", good)])
        XCTAssertEqual(text.status, 415)
        let get = try await send(port: port, method: "GET", body: [], headers: [])
        XCTAssertEqual(get.status, 405)
        let elsewhere = try await send(
            port: port, path: "/other", body: body,
            headers: [("Content-Type", "application/json"), ("Hearth-Signature", good)])
        XCTAssertEqual(elsewhere.status, 404)
        let large = try await deliver(port: port, String(repeating: " ", count: 5000) + json)
        XCTAssertEqual(large.status, 413)
        XCTAssertEqual(calls.withLockedValue { $0 }, 0)

        let accepted = try await send(
            port: port, path: "/hook?attempt=2", body: body,
            headers: [("Content-Type", "application/json; charset=utf-8"), ("Hearth-Signature", good)])
        XCTAssertEqual(accepted.status, 200)
        XCTAssertEqual(calls.withLockedValue { $0 }, 1)
        try await server.stop()
    }

    func testTwoDeliveriesOnOneKeptAliveConnection() async throws {
        let functions = Functions()
        let ids = NIOLockedValueBox<[String]>([])
        functions.onWrite("/messages/{id}") { event in ids.withLockedValue { $0.append(event.id) } }
        let (server, port) = try await startServer(functions)
        defer { Task { try? await server.stop() } }
        var bytes: [UInt8] = []
        for (id, last) in [("k1", false), ("k2", true)] {
            let body = Array(DispatchTests.eventJSON(id: id).utf8)
            let signature = SignatureVerifier.signatureHeader(
                body: body, secret: Array(secret.utf8), timestamp: SignatureVerifier.currentTime())
            let head =
                "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\nHearth-Signature: \(signature)\r\n"
                + (last ? "Connection: close\r\n" : "") + "\r\n"
            bytes += Array(head.utf8) + body
        }
        let raw = String(decoding: try await RawHTTP.exchange(port: port, bytes: bytes), as: UTF8.self)
        XCTAssertEqual(raw.components(separatedBy: "HTTP/1.1 200 OK").count - 1, 2, raw)
        XCTAssertEqual(ids.withLockedValue { $0 }, ["k1", "k2"])
        try await server.stop()
    }

    func testAnIdleConnectionIsClosedButASlowHandlerIsWaitedFor() async throws {
        let functions = Functions()
        functions.onCreate("/messages/{id}") { _ in try await Task.sleep(for: .milliseconds(600)) }
        let (server, port) = try await startServer(functions, idleTimeout: .milliseconds(200))
        defer { Task { try? await server.stop() } }
        // Nothing sent: the server closes the connection without an answer.
        let silent = try await RawHTTP.exchange(port: port, bytes: [])
        XCTAssertEqual(silent, [])
        // A handler longer than the idle timeout still gets its answer out.
        let slow = try await deliver(port: port, DispatchTests.eventJSON())
        XCTAssertEqual(slow.status, 200)
        try await server.stop()
    }

    struct Unavailable: Error {}

    func testAThrowingHandlerIsAnswered500AndTheRetryIsDelivered() async throws {
        let functions = Functions()
        let attempts = NIOLockedValueBox(0)
        functions.onCreate("/messages/{id}") { _ in
            let attempt = attempts.withLockedValue { count in
                count += 1
                return count
            }
            if attempt < 3 { throw Unavailable() }
        }
        let (server, port) = try await startServer(functions)
        defer { Task { try? await server.stop() } }
        let first = try await deliver(port: port, DispatchTests.eventJSON())
        XCTAssertEqual(first.status, 500)
        let second = try await deliver(port: port, DispatchTests.eventJSON())
        XCTAssertEqual(second.status, 500)
        let third = try await deliver(port: port, DispatchTests.eventJSON())
        XCTAssertEqual(third.status, 200)
        XCTAssertEqual(attempts.withLockedValue { $0 }, 3)
        try await server.stop()
    }

    func testARequestThatNeverEndsIsAnswered408() async throws {
        let (server, port) = try await startServer(Functions())
        defer { Task { try? await server.stop() } }
        // Announces 100 bytes and sends 2.
        let head = "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}"
        let raw = try await RawHTTP.exchange(port: port, bytes: Array(head.utf8))
        XCTAssertTrue(String(decoding: raw, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        try await server.stop()
    }
}

/// Sends bytes on a fresh loopback connection and collects everything until the server closes.
enum RawHTTP {
    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received = NIOLockedValueBox<[UInt8]>([])
        let done: EventLoopPromise<[UInt8]>

        init(done: EventLoopPromise<[UInt8]>) { self.done = done }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                received.withLockedValue { $0 += bytes }
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.succeed(received.withLockedValue { $0 })
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    static func exchange(port: Int, bytes: [UInt8]) async throws -> [UInt8] {
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: [UInt8].self)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(done: done))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        return try await done.futureResult.get()
    }
}
