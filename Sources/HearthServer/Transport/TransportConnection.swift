import HearthEngine
import NIOCore

/// A transport's connection handler as the engine and the server's shutdown reach it: each call
/// comes on the connection's own event loop (the handler itself is not `Sendable`; its type is,
/// for the closures that carry it there).
protocol TransportConnection: AnyObject, SendableMetatype {
    /// The connection's id, also its session's id in the engine.
    var id: UInt64 { get }
    /// The handler's place in the pipeline while it is in it.
    var context: ChannelHandlerContext? { get set }
    /// How the engine reaches the connection while the handler is in the pipeline.
    var sessionLink: SessionLink? { get set }
    /// The engine's output for this connection, in order.
    func receive(_ outputs: [Outbound])
    /// Graceful shutdown: the transport answers what it accepted, then closes.
    func beginShutdown()
}

extension TransportConnection {
    /// The handler joined the pipeline at `context`: the engine can reach it from now on.
    func attach(to context: ChannelHandlerContext) {
        self.context = context
        sessionLink = makeSessionLink(on: context.eventLoop)
    }

    /// The handler left the pipeline: this breaks the cycle handler → link → handler.
    func detach() {
        context = nil
        sessionLink = nil
    }

    /// The link through which the engine hands this connection its output on `loop`. It holds
    /// the connection: the handler drops it when it leaves the pipeline.
    func makeSessionLink(on loop: any EventLoop) -> SessionLink {
        let bound = NIOLoopBound(self, eventLoop: loop)
        return SessionLink(id: id, loop: loop) { outputs in bound.value.receive(outputs) }
    }

    /// Puts the connection in `registry`, so that shutdown reaches it on its own loop;
    /// `sendLine` when it takes the server's unasked lines (`ConnectionRegistry.broadcast`).
    func register(
        in registry: ConnectionRegistry, channel: any Channel, sendLine: (@Sendable ([UInt8]) -> Void)? = nil
    ) {
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        registry.add(id: id, channel: channel, beginShutdown: { bound.value.beginShutdown() }, sendLine: sendLine)
    }
}
