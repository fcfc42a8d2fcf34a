import ArgumentParser
import NIOCore
import NIOPosix

/// A server that does nothing but answer: SwiftNIO on one event loop, greeting each connection
/// with one line and answering each request line with a fixed `{"id":0,"ok":true}` line, written
/// and flushed once per read. No parsing, no engine, no log, no hop between threads.
///
/// It speaks just enough of the line protocol for `lean --target hearth`, so that
/// `scripts/cpu-budget.sh` can measure what SwiftNIO's own path for one read and one answer
/// costs per request: the least any server built on SwiftNIO this way spends, hearthd included.
struct NIOFloorScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nio-floor",
        abstract: "Serve fixed answers to line requests on one SwiftNIO event loop, until killed.")

    @Option(help: "Port to listen on (127.0.0.1).") var port = 9000

    func run() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FixedAnswerHandler())
                }
            }
            .bind(host: "127.0.0.1", port: port)
            .wait()
        try channel.closeFuture.wait()
    }
}

/// Answers every line it reads with the same bytes.
private final class FixedAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private static let hello = Array(#"{"event":"hello"}"#.utf8) + [0x0A]
    private static let answer = Array(#"{"id":0,"ok":true}"#.utf8) + [0x0A]
    /// One answer, shared by every write of a single one (no copy, no allocation).
    private var oneAnswer = ByteBuffer()
    private var pending = 0

    func handlerAdded(context: ChannelHandlerContext) {
        oneAnswer = context.channel.allocator.buffer(bytes: Self.answer)
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: Self.hello)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let input = unwrapInboundIn(data)
        pending += input.withUnsafeReadableBytes { bytes in bytes.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard pending > 0 else { return }
        if pending == 1 {
            context.writeAndFlush(wrapOutboundOut(oneAnswer), promise: nil)
        } else {
            var answers = context.channel.allocator.buffer(capacity: pending * Self.answer.count)
            for _ in 0..<pending { answers.writeBytes(Self.answer) }
            context.writeAndFlush(wrapOutboundOut(answers), promise: nil)
        }
        pending = 0
    }
}
