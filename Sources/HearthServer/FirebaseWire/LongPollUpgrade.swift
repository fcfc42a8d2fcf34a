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
/// (`LongPollSession`): frames become messages (`FirebaseFrameAssembler`) handed to the session on
/// its loop, and the session's messages become frames. Bounded as the WebSocket transport is: a
/// message's size (`maxMessageBytes`), the requests waiting for the engine (`maxPipelinedRequests`,
/// then reading stops), the output the peer has not taken (`maxOutboundBytes`: a slow consumer is
/// closed), and a silent connection.
final class LongPollSocketHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = Never
    typealias OutboundOut = WebSocketFrame

    let session: LongPollRegistry.Entry
    let id: UInt64
    let configuration: ServerConfiguration
    let security: SecurityState
    let registry: ConnectionRegistry
    let logger: Logger
    var admission: ConnectionAdmission
    var context: ChannelHandlerContext?
    var socket: FirebaseUpgradeSocket?
    var assembler: FirebaseFrameAssembler
    var fragments: [UInt8] = []
    var collectingFragments = false
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
        self.assembler = FirebaseFrameAssembler(maxMessageBytes: configuration.maxMessageBytes)
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
        let frame = unwrapInboundIn(data)
        lastActivity = .now()
        switch frame.opcode {
        case .text:
            collectingFragments = !frame.fin
            if frame.fin {
                take(Array(buffer: frame.unmaskedData))
            } else {
                fragments = Array(buffer: frame.unmaskedData)
            }
        case .continuation:
            guard collectingFragments else { return closeSocket(code: .protocolError, context: context) }
            if fragments.count + frame.length > configuration.maxMessageBytes {
                return closeSocket(code: .messageTooLarge, context: context)
            }
            fragments.append(contentsOf: frame.unmaskedData.readableBytesView)
            if frame.fin {
                collectingFragments = false
                let message = fragments
                fragments = []
                take(message)
            }
        case .binary:
            closeSocket(code: .unacceptableData, context: context)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            closeSocket(code: .normalClosure, context: context)
        default:
            break
        }
    }

    /// One complete text frame: a whole message goes to the session, on its loop.
    func take(_ frame: [UInt8]) {
        guard !closing, let socket else { return }
        let entry = session
        switch assembler.take(frame) {
        case .pending, .keepAlive: break
        case .message(let message):
            entry.loop.execute { entry.session.value.receivedOverSecondary(message, from: socket) }
        case .oversized(let prefix):
            entry.loop.execute { entry.session.value.receivedOversizedOverSecondary(prefix: prefix, from: socket) }
        }
    }

    /// The session's messages, cut into frames; a peer that leaves more than `maxOutboundBytes`
    /// unread is closed.
    func deliver(_ batch: [[UInt8]]) {
        guard let context, !closing else { return }
        for message in batch {
            for piece in FirebaseFrameAssembler.split(message) {
                let data = context.channel.allocator.buffer(bytes: piece)
                context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: data)), promise: nil)
            }
        }
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
        var data = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        data.write(webSocketErrorCode: code)
        data.writeString(reason)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
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
