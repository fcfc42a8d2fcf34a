import HearthCore
import HearthProtocol
import Logging
import NIOCore
import NIOWebSocket

/// The session's handle on the WebSocket of an upgrade: callable from the session's loop, it hops
/// to the socket's.
final class FirebaseUpgradeSocket: Sendable {
    let loop: any EventLoop
    let handler: NIOLoopBound<LongPollSocketHandler>

    init(handler: LongPollSocketHandler, loop: any EventLoop) {
        self.loop = loop
        self.handler = NIOLoopBound(handler, eventLoop: loop)
    }

    /// Writes messages in order (calls from one loop keep their order).
    func deliver(_ batch: [[UInt8]]) {
        let handler = self.handler
        loop.execute { handler.value.deliver(batch) }
    }

    func close() {
        let handler = self.handler
        loop.execute { handler.value.closeFromSession() }
    }

    /// Stops or resumes reading: the session has `maxPipelinedRequests` waiting for the engine.
    func pause(_ paused: Bool) {
        let handler = self.handler
        loop.execute { handler.value.pause(paused) }
    }
}

/// The WebSocket (`/.ws?…&s=<session id>`) that upgrades a long-polling session
/// (`LongPollSession`): frames become messages (`WebSocketMessages`) handed to the session on its
/// loop, and the session's messages become frames (`WebSocketFrameWriter`). Bounded as the WebSocket transport is: a
/// message's size (`maxMessageBytes`), the requests waiting for the engine (`maxPipelinedRequests`,
/// then reading stops), the output the peer has not taken (`maxOutboundBytes`: a slow consumer is
/// closed), and a silent connection.
final class LongPollSocketHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    let session: LongPollRegistry.Entry
    let id: UInt64
    let configuration: ServerConfiguration
    let security: SecurityState
    let registry: ConnectionRegistry
    let logger: Logger
    var admission: ConnectionAdmission
    var context: ChannelHandlerContext?
    var socket: FirebaseUpgradeSocket?
    /// The client's frames, read into messages.
    var messages: WebSocketMessages
    var closing = false
    var idleTimer: Scheduled<Void>?
    var readPaused = false
    var readWanted = false
    var lastActivity = NIODeadline.now()

    init(
        session: LongPollRegistry.Entry, id: UInt64, configuration: ServerConfiguration, security: SecurityState,
        registry: ConnectionRegistry, admission: ConnectionAdmission, logger: Logger
    ) {
        self.session = session
        self.id = id
        self.configuration = configuration
        self.security = security
        self.registry = registry
        self.admission = admission
        self.logger = logger
        self.messages = WebSocketMessages(maxMessageBytes: configuration.maxMessageBytes)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let socket = FirebaseUpgradeSocket(handler: self, loop: context.eventLoop)
        self.socket = socket
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        registry.add(id: id, channel: context.channel, beginShutdown: { bound.value.closeFromSession() })
        armIdleTimer(context: context)
        let entry = session
        entry.loop.execute {
            guard entry.session.value.attach(socket) else {
                // No session to join any more: `r` makes the client abandon the upgrade.
                socket.deliver([Array(#"{"t":"c","d":{"t":"r","d":""}}"#.utf8)])
                socket.close()
                return
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closing = true
        idleTimer?.cancel()
        _ = admission.release(from: security)
        registry.remove(id: id)
        self.context = nil
        guard let socket else { return }
        let entry = session
        entry.loop.execute { entry.session.value.secondaryClosed(socket) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        security.logConnectionError(
            error, peer: admission.remoteAddress, message: "Firebase connection error", logger: logger)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActivity = .now()
        messages.read(unwrapInboundIn(data)) { event in
            guard !closing, let socket else { return }
            let entry = session
            switch event {
            case .message(let message):
                // A whole message goes to the session, on its loop.
                let bytes = Array(buffer: message)
                entry.loop.execute { entry.session.value.receivedOverSecondary(bytes, from: socket) }
            case .oversized(let prefix):
                entry.loop.execute {
                    entry.session.value.receivedOversizedOverSecondary(prefix: prefix, from: socket)
                }
            case .ping(let payload):
                var pong = context.channel.allocator.buffer(capacity: payload.readableBytes + 2)
                WebSocketFrameWriter.writeHeader(.pong, length: payload.readableBytes, into: &pong)
                pong.writeImmutableBuffer(payload)
                context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
            case .close(let code):
                closeSocket(code: code, context: context)
            }
        }
    }

    /// The session's messages, cut into frames; a peer that leaves more than `maxOutboundBytes`
    /// unread is closed.
    func deliver(_ batch: [[UInt8]]) {
        guard let context, !closing else { return }
        var frames = context.channel.allocator.buffer(capacity: batch.reduce(0) { $0 + $1.count + 16 })
        for message in batch {
            for piece in FirebaseFrameAssembler.split(message) {
                WebSocketFrameWriter.writeHeader(.text, length: piece.count, into: &frames)
                frames.writeBytes(piece)
            }
        }
        context.write(wrapOutboundOut(frames), promise: nil)
        lastActivity = .now()
        context.flush()
        let unsent = context.unsentBytes
        if unsent > configuration.maxOutboundBytes {
            logger.warning(
                "closing a slow consumer", metadata: ["pendingBytes": "\(unsent)", "reason": "maxOutboundBytes"])
            closeSocket(
                code: .policyViolation, reason: "slow consumer: the unsent output exceeded maxOutboundBytes",
                context: context)
        }
    }

    func read(context: ChannelHandlerContext) {
        if readPaused {
            readWanted = true
        } else {
            context.read()
        }
    }

    func pause(_ paused: Bool) {
        readPaused = paused
        guard !paused, readWanted, let context else { return }
        readWanted = false
        context.read()
    }

    func closeFromSession() {
        guard let context else { return }
        closeSocket(code: .goingAway, context: context)
    }

    func closeSocket(code: WebSocketErrorCode, reason: String = "", context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        var frame = context.channel.allocator.buffer(capacity: 4 + reason.utf8.count)
        WebSocketFrameWriter.writeClose(code: code, reason: reason, into: &frame)
        context.writeAndFlush(wrapOutboundOut(frame)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: FirebaseSocketHandler.closeGrace) {
            context.close(promise: nil)
        }
    }

    func armIdleTimer(context: ChannelHandlerContext) {
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(
            deadline: lastActivity + FirebaseSocketHandler.idleTimeout
        ) { [self] in
            guard let context = self.context, !closing else { return }
            if NIODeadline.now() >= lastActivity + FirebaseSocketHandler.idleTimeout {
                closeSocket(code: .goingAway, reason: "idle", context: context)
            } else {
                armIdleTimer(context: context)
            }
        }
    }
}
