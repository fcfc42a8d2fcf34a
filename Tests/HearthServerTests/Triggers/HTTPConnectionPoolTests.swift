import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import XCTest

@testable import HearthServer

/// Deliveries' kept-alive connections: reused between requests, dropped when the receiver says
/// `Connection: close`, and a request whose reused connection the receiver had closed is sent
/// again on a new one.
final class HTTPConnectionPoolTests: XCTestCase {
    /// A receiver that keeps connections open unless told to close them, and counts them.
    final class KeepAliveReceiver: Sendable {
        let accepted = NIOLockedValueBox(0)
        let closeAfterAnswer = NIOLockedValueBox(false)
        let channels = NIOLockedValueBox<[any Channel]>([])
        let server: any Channel

        init() async throws {
            let accepted = self.accepted
            let closeAfterAnswer = self.closeAfterAnswer
            let channels = self.channels
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    accepted.withLockedValue { $0 += 1 }
                    channels.withLockedValue { $0.append(channel) }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(Answer(close: closeAfterAnswer))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
        }

        var port: Int { server.localAddress?.port ?? 0 }

        /// Closes every accepted connection (a receiver's idle timeout).
        func dropConnections() async {
            for channel in channels.withLockedValue({ $0 }) { try? await channel.close().get() }
        }

        final class Answer: ChannelInboundHandler, Sendable {
            typealias InboundIn = HTTPServerRequestPart
            typealias OutboundOut = HTTPServerResponsePart
            let close: NIOLockedValueBox<Bool>

            init(close: NIOLockedValueBox<Bool>) { self.close = close }

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                guard case .end = unwrapInboundIn(data) else { return }
                var head = HTTPResponseHead(version: .http1_1, status: .ok)
                head.headers.add(name: "Content-Length", value: "2")
                let closing = close.withLockedValue { $0 }
                if closing { head.headers.add(name: "Connection", value: "close") }
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.write(
                    wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "ok")))), promise: nil)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    if closing { channel.close(promise: nil) }
                }
            }
        }
    }

    func testConnectionsAreKeptReusedAndRenewed() async throws {
        let receiver = try await KeepAliveReceiver()
        defer { receiver.server.close(promise: nil) }
        let url = try HTTPURL("http://127.0.0.1:\(receiver.port)/hook", source: "test", setting: "url")
        let pool = HTTPConnectionPool(url: url, tls: nil, loop: MultiThreadedEventLoopGroup.singleton.next())
        defer { pool.close() }
        let request = HTTPRequester.Request(method: .POST, url: url, headers: [], body: Array("{}".utf8))
        for _ in 0..<5 {
            let answer = try await pool.send(request, timeout: .seconds(5), maxBytes: 1024).get()
            XCTAssertEqual(answer.status, 200)
            XCTAssertEqual(answer.body, Array("ok".utf8))
        }
        XCTAssertEqual(receiver.accepted.withLockedValue { $0 }, 1, "one connection for requests one after another")
        // Two at once need two connections, both kept.
        async let first = pool.send(request, timeout: .seconds(5), maxBytes: 1024).get()
        async let second = pool.send(request, timeout: .seconds(5), maxBytes: 1024).get()
        _ = try await (first, second)
        XCTAssertEqual(receiver.accepted.withLockedValue { $0 }, 2)
        // The receiver closed them while idle: the next request still succeeds, on a new one.
        await receiver.dropConnections()
        try await Task.sleep(nanoseconds: 100_000_000)
        let renewed = try await pool.send(request, timeout: .seconds(5), maxBytes: 1024).get()
        XCTAssertEqual(renewed.status, 200)
        XCTAssertEqual(receiver.accepted.withLockedValue { $0 }, 3)
        // `Connection: close` is honoured: each request after it connects again.
        receiver.closeAfterAnswer.withLockedValue { $0 = true }
        for _ in 0..<3 { _ = try await pool.send(request, timeout: .seconds(5), maxBytes: 1024).get() }
        XCTAssertEqual(receiver.accepted.withLockedValue { $0 }, 5, "the kept one, then two new ones")
    }

    func testADeadlineAndABodyCapFailTheRequest() async throws {
        let silent = try await LoopbackReceiver.start()
        defer { silent.stop() }
        silent.set(silent: true)
        let url = try HTTPURL("http://127.0.0.1:\(silent.port)/", source: "test", setting: "url")
        let pool = HTTPConnectionPool(url: url, tls: nil, loop: MultiThreadedEventLoopGroup.singleton.next())
        defer { pool.close() }
        let request = HTTPRequester.Request(method: .POST, url: url, headers: [], body: [])
        do {
            _ = try await pool.send(request, timeout: .milliseconds(200), maxBytes: 1024).get()
            XCTFail("a silent receiver cannot answer")
        } catch {
            XCTAssertTrue("\(error)".contains("within 200 milliseconds"), "\(error)")
        }
        silent.set(silent: false)
        silent.set(status: 200, body: Array(repeating: 0x61, count: 4096))
        do {
            _ = try await pool.send(request, timeout: .seconds(5), maxBytes: 1024).get()
            XCTFail("the answer is over the cap")
        } catch {
            XCTAssertTrue("\(error)".contains("larger than 1024"), "\(error)")
        }
    }

    func testARefusedConnectionFailsAtOnce() async throws {
        let url = try HTTPURL("http://127.0.0.1:1/", source: "test", setting: "url")
        let pool = HTTPConnectionPool(url: url, tls: nil, loop: MultiThreadedEventLoopGroup.singleton.next())
        defer { pool.close() }
        let request = HTTPRequester.Request(method: .POST, url: url, headers: [], body: [])
        let started = ContinuousClock.now
        do {
            _ = try await pool.send(request, timeout: .seconds(5), maxBytes: 1024).get()
            XCTFail("nothing listens on port 1")
        } catch {
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "\(error)")
        }
    }
}
