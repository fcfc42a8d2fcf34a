import HearthJSON
import HearthProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A load-generating connection: sends request lines, completes one promise per response in
/// order, and counts event lines. Built on SwiftNIO so that one process can drive hundreds of
/// connections from two threads.
final class BenchConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<BenchHandler>

    private init(channel: any Channel, handler: NIOLoopBound<BenchHandler>) {
        self.channel = channel
        self.handler = handler
    }

    static func connect(host: String, port: Int, group: any EventLoopGroup) async throws -> BenchConnection {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLength: 1 << 30)))
                    try channel.pipeline.syncOperations.addHandler(BenchHandler())
                }
            }
            .connect(host: host, port: port).get()
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: BenchHandler.self), eventLoop: channel.eventLoop)
        }.get()
        return BenchConnection(channel: channel, handler: handler)
    }

    /// Sends one request line and returns its response (raw bytes of the line).
    func request(_ line: String) -> EventLoopFuture<ByteBuffer> {
        let handler = self.handler
        let channel = self.channel
        return channel.eventLoop.flatSubmit {
            let promise = channel.eventLoop.makePromise(of: ByteBuffer.self)
            handler.value.pending.append(promise)
            channel.writeAndFlush(channel.allocator.buffer(string: line + "\n"), promise: nil)
            return promise.futureResult
        }
    }

    /// Sends many request lines at once and returns a future for each response.
    func pipeline(_ lines: [String]) -> EventLoopFuture<[ByteBuffer]> {
        let handler = self.handler
        let channel = self.channel
        return channel.eventLoop.flatSubmit {
            var futures: [EventLoopFuture<ByteBuffer>] = []
            var buffer = channel.allocator.buffer(capacity: lines.count * 64)
            for line in lines {
                let promise = channel.eventLoop.makePromise(of: ByteBuffer.self)
                handler.value.pending.append(promise)
                futures.append(promise.futureResult)
                buffer.writeString(line)
                buffer.writeInteger(UInt8(ascii: "\n"))
            }
            channel.writeAndFlush(buffer, promise: nil)
            return EventLoopFuture.whenAllSucceed(futures, on: channel.eventLoop)
        }
    }

    /// Event lines received so far.
    var eventCount: Int {
        get async throws { try await channel.eventLoop.submit { self.handler.value.events }.get() }
    }

    func close() async {
        try? await channel.close()
    }
}

/// Splits the server's lines into responses (in order) and events.
final class BenchHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame

    var pending = CircularBuffer<EventLoopPromise<ByteBuffer>>()
    var events = 0
    private var sawHello = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .line(let line) = unwrapInboundIn(data) else { return }
        if !sawHello {
            sawHello = true
            return
        }
        // Responses start with {"id": ; events with {"sub": or {"event":
        if line.readableBytesView.starts(with: #"{"id""#.utf8) {
            pending.popFirst()?.succeed(line)
        } else {
            events += 1
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        while let promise = pending.popFirst() { promise.fail(ChannelError.ioOnClosedChannel) }
    }
}
