internal import HearthProtocol
import NIOCore

/// Forwards a connection's lifecycle and its lines to the repo. Runs on the repo's event loop.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias OutboundOut = ByteBuffer

    private let repo: Repo

    init(repo: Repo) { self.repo = repo }

    func channelActive(context: ChannelHandlerContext) {
        // Before any request: makes a server of another protocol answer (`GreetingCheck`).
        context.writeAndFlush(
            wrapOutboundOut(context.channel.allocator.buffer(bytes: GreetingCheck.probe)), promise: nil)
        repo.channelBecameActive(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        repo.channelBecameInactive(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .line(let line): repo.received(line, on: context.channel)
        case .tooLarge: context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        repo.readComplete(on: context.channel)
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        repo.logger.debug("connection error", metadata: ["error": "\(error)"])
        repo.channelErrorCaught(error, on: context.channel)
        context.close(promise: nil)
    }
}
