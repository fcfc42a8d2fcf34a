import HearthTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import XCTest

@testable import HearthServer

/// The bounded HTTP/1.1 client against a loopback receiver: a POST with its headers and body,
/// the answer's status and body, the deadline, the size cap and certificate verification.
final class HTTPRequesterTests: XCTestCase {
    private func send(
        _ receiver: LoopbackReceiver, method: HTTPMethod = .POST, path: String = "/hook",
        headers: [(name: String, value: String)] = [], body: [UInt8] = [], tls: NIOSSLContext? = nil,
        host: String = "127.0.0.1", scheme: String? = nil, timeout: TimeAmount = .seconds(5), maxBytes: Int = 1 << 16
    ) async throws -> HTTPRequester.Response {
        let scheme = scheme ?? (tls == nil ? "http" : "https")
        let url = try HTTPURL("\(scheme)://\(host):\(receiver.port)\(path)", source: "test", setting: "url")
        return try await HTTPRequester.send(
            HTTPRequester.Request(method: method, url: url, headers: headers, body: body), tls: tls,
            group: MultiThreadedEventLoopGroup.singleton, timeout: timeout, maxBytes: maxBytes)
    }

    func testPostCarriesHeadersAndBodyAndReturnsTheAnswer() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(status: 202, body: Array(#"{"ok":true}"#.utf8))
        let body = Array(#"{"id":"e1"}"#.utf8)
        let response = try await send(
            receiver, path: "/hook?x=1",
            headers: [("Content-Type", "application/json"), ("Hearth-Event-Id", "e1")], body: body)
        XCTAssertEqual(response.status, 202)
        XCTAssertEqual(response.body, Array(#"{"ok":true}"#.utf8))
        let request = try XCTUnwrap(receiver.requests.first)
        XCTAssertEqual(request.method, .POST)
        XCTAssertEqual(request.uri, "/hook?x=1")
        XCTAssertEqual(request.body, body)
        XCTAssertEqual(request.headers.first(name: "Content-Type"), "application/json")
        XCTAssertEqual(request.headers.first(name: "Hearth-Event-Id"), "e1")
        XCTAssertEqual(request.headers.first(name: "Content-Length"), "\(body.count)")
        XCTAssertEqual(request.headers.first(name: "Host"), "127.0.0.1:\(receiver.port)")

        receiver.set(status: 500, body: [])
        let failed = try await send(receiver, body: body)
        XCTAssertEqual(failed.status, 500, "any status is an answer; the caller decides")
        let get = try await send(receiver, method: .GET)
        XCTAssertEqual(get.status, 500)
        XCTAssertNil(receiver.requests.last?.headers.first(name: "Content-Length"), "a GET without a body")
    }

    func testNoAnswerWithinTheTimeoutFails() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(silent: true)
        let start = ContinuousClock.now
        do {
            _ = try await send(receiver, body: [1], timeout: .milliseconds(300))
            XCTFail("answered")
        } catch {
            XCTAssertTrue("\(error)".contains("no complete answer within 300 milliseconds"), "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(3))
    }

    func testAnAnswerLargerThanTheCapFails() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(status: 200, body: [UInt8](repeating: 0x61, count: 5000))
        do {
            _ = try await send(receiver, maxBytes: 4096)
            XCTFail("accepted an oversized answer")
        } catch {
            XCTAssertTrue("\(error)".contains("larger than 4096 bytes"), "\(error)")
        }
        let fits = try await send(receiver, maxBytes: 5000)
        XCTAssertEqual(fits.body.count, 5000)
    }

    func testARefusedConnectionFails() async throws {
        let receiver = try await LoopbackReceiver.start()
        let port = receiver.port
        receiver.stop()
        let url = try HTTPURL("http://127.0.0.1:\(port)/hook", source: "test", setting: "url")
        do {
            _ = try await HTTPRequester.send(
                HTTPRequester.Request(method: .POST, url: url), tls: nil, group: MultiThreadedEventLoopGroup.singleton,
                timeout: .seconds(5), maxBytes: 1024)
            XCTFail("connected to a closed port")
        } catch {}
    }

    func testHTTPSVerifiesTheCertificateAgainstTheCAFile() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(pki.path("server.crt")).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: pki.path("server.key"), format: .pem)))
        configuration.minimumTLSVersion = .tlsv12
        let receiver = try await LoopbackReceiver.start(tls: try NIOSSLContext(configuration: configuration))
        defer { receiver.stop() }
        receiver.set(status: 204, body: [])
        let trusted = try HTTPRequester.tlsContext(caFile: pki.path("ca.crt"))
        let response = try await send(receiver, body: Array("{}".utf8), tls: trusted, host: "localhost")
        XCTAssertEqual(response.status, 204)
        XCTAssertEqual(receiver.requests.last?.body, Array("{}".utf8))

        let system = try HTTPRequester.tlsContext(caFile: nil)
        do {
            _ = try await send(receiver, body: [1], tls: system, host: "localhost")
            XCTFail("trusted a certificate of an unknown CA")
        } catch {}
        do {
            _ = try await send(receiver, body: [1], tls: nil, host: "localhost", scheme: "https")
            XCTFail("sent an https request without TLS")
        } catch {
            XCTAssertTrue("\(error)".contains("TLS"), "\(error)")
        }
        XCTAssertThrowsError(try HTTPRequester.tlsContext(caFile: pki.path("missing.crt")))
    }
}

/// An HTTP/1.1 receiver on loopback that records each request and answers it with the set
/// status and body (or not at all when silent); over TLS when given a context.
final class LoopbackReceiver: Sendable {
    struct Received: Sendable {
        let method: HTTPMethod
        let uri: String
        let headers: HTTPHeaders
        let body: [UInt8]
    }

    private struct State {
        var status = 200
        var body: [UInt8] = []
        var silent = false
        /// How long each answer waits (a slow receiver).
        var delayMilliseconds: Int64 = 0
        var requests: [Received] = []
    }

    private let state: NIOLockedValueBox<State>
    private let channel: any Channel
    let port: Int

    private init(state: NIOLockedValueBox<State>, channel: any Channel) {
        self.state = state
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
    }

    static func start(tls: NIOSSLContext? = nil) async throws -> LoopbackReceiver {
        let state = NIOLockedValueBox(State())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Responder(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackReceiver(state: state, channel: channel)
    }

    var requests: [Received] { state.withLockedValue { $0.requests } }

    func set(status: Int, body: [UInt8]) {
        state.withLockedValue {
            $0.status = status
            $0.body = body
        }
    }

    func set(silent: Bool) { state.withLockedValue { $0.silent = silent } }

    func set(delayMilliseconds: Int64) { state.withLockedValue { $0.delayMilliseconds = delayMilliseconds } }

    func stop() { try? channel.close().wait() }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let state: NIOLockedValueBox<State>
        var head: HTTPRequestHead?
        var body: [UInt8] = []

        init(state: NIOLockedValueBox<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let received):
                head = received
                body = []
            case .body(let buffer):
                body.append(contentsOf: buffer.readableBytesView)
            case .end:
                guard let head else { return }
                let answer = state.withLockedValue { state in
                    state.requests.append(
                        Received(method: head.method, uri: head.uri, headers: head.headers, body: body))
                    return state
                }
                guard !answer.silent else { return }
                let channel = context.channel
                guard answer.delayMilliseconds > 0 else { return Self.respond(answer, on: channel) }
                channel.eventLoop.scheduleTask(in: .milliseconds(answer.delayMilliseconds)) {
                    Self.respond(answer, on: channel)
                }
            }
        }

        static func respond(_ answer: State, on channel: any Channel) {
            var responseHead = HTTPResponseHead(
                version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status))
            responseHead.headers.add(name: "Content-Length", value: "\(answer.body.count)")
            responseHead.headers.add(name: "Connection", value: "close")
            channel.write(HTTPServerResponsePart.head(responseHead), promise: nil)
            if !answer.body.isEmpty {
                channel.write(
                    HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: answer.body))), promise: nil
                )
            }
            channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
