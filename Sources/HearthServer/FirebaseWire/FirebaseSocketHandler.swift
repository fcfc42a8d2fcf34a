import HearthCore
import HearthEngine
import HearthProtocol
import Logging
import NIOCore
import NIOWebSocket

/// A Firebase session carried by a WebSocket (docs/firebase-sdk.md, "Frames"): text frames are
/// put back together into messages (`FirebaseFrameAssembler`) for the `FirebaseSession`, and its
/// messages are cut into frames.
///
/// Bounded like the other transports: a message's size (`maxMessageBytes`), the requests waiting
/// for the engine (`maxPipelinedRequests`, then reading stops), the output the peer has not taken
/// (`maxOutboundBytes` and the server's buffer budget: a slow consumer is closed), a peer that
/// takes nothing (`writeStallTimeoutSeconds`) and a silent connection (`idleTimeout`).
final class FirebaseSocketHandler: ChannelDuplexHandler, RemovableChannelHandler, FirebaseTransport, StallWatching {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    let session: FirebaseSession
    let configuration: ServerConfiguration
    let security: SecurityState
    let registry: ConnectionRegistry
    let logger: Logger
    var context: ChannelHandlerContext?
    var admission: ConnectionAdmission
    var remoteAddress: String { admission.remoteAddress }

    /// The client's frames, read into messages.
    var messages: WebSocketMessages
    @exclusivity(unchecked) var closing = false
    @exclusivity(unchecked) var readPaused = false
    @exclusivity(unchecked) var wroteSinceFlush = false
    /// Frames queued during one event-loop turn, written with one write (`flush`).
    @exclusivity(unchecked) var outbox = ByteBuffer()
    @exclusivity(unchecked) var outputBound = OutputBound()
    var charge = BufferCharge()
    @exclusivity(unchecked) var stallWatch = StallWatch()
    var stallTimer: Scheduled<Void>?
    var idleTimer: Scheduled<Void>?
    @exclusivity(unchecked) var lastActivity = NIODeadline.now()

    /// A connection with no frame either way for this long is closed: the SDKs send a keep-alive
    /// after 45 seconds of silence.
    static let idleTimeout = TimeAmount.seconds(135)
    /// How long a closing connection's last frames have to leave.
    static let closeGrace = TimeAmount.seconds(2)

    init(session: FirebaseSession, admission: ConnectionAdmission, registry: ConnectionRegistry) {
        self.session = session
        self.admission = admission
        self.configuration = session.configuration
        self.security = session.security
        self.registry = registry
        self.logger = session.logger
        self.messages = WebSocketMessages(maxMessageBytes: session.configuration.maxMessageBytes)
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        registry.add(id: session.id, channel: channel, beginShutdown: { bound.value.beginShutdown() })
        session.databases.defaultDatabase.engine.metrics.connectionOpened(kind: .firebase)
        armIdleTimer(context: context)
        session.start(transport: self) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closing = true
        idleTimer?.cancel()
        stallTimer?.cancel()
        charge.release(from: security.buffers)
        _ = admission.release(from: security)
        session.databases.defaultDatabase.engine.metrics.connectionClosed(kind: .firebase)
        session.end()
        registry.remove(id: session.id)
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        security.logConnectionError(error, peer: remoteAddress, message: "Firebase connection error", logger: logger)
        context.close(promise: nil)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActivity = .now()
        messages.read(unwrapInboundIn(data)) { event in
            guard !closing else { return }
            switch event {
            case .message(let message): session.received(buffer: message)
            case .oversized(let prefix): session.receivedOversized(prefix: prefix)
            case .ping(let payload): sendControl(.pong, payload: payload)
            case .close(let code): closeSocket(code: code, context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        session.submitQueued()
        flush()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if session.backlog >= configuration.maxPipelinedRequests || !context.channel.isWritable {
            readPaused = true
        } else {
            context.read()
        }
    }

    func pendingShrank() {
        guard let context, readPaused, session.backlog < configuration.maxPipelinedRequests / 2,
            context.channel.isWritable
        else { return }
        readPaused = false
        context.read()
    }

    // MARK: Shutdown

    func beginShutdown() {
        guard let context, !closing else { return }
        closeSocket(code: .goingAway, context: context)
    }

    func end(refusal: String?) {
        guard let context else { return }
        if let refusal {
            // `s` (shutdown): the client does not come back.
            send(FirebaseOutbound.control("s", refusal))
            flush()
            closeSocket(code: .policyViolation, context: context)
        } else {
            closeSocket(code: .goingAway, context: context)
        }
    }

    /// Sends what was queued and a close frame with `code`, and closes once they are written.
    func closeSocket(code: WebSocketErrorCode, reason: String = "", context: ChannelHandlerContext) {
        guard !closing else { return }
        WebSocketFrameWriter.writeClose(code: code, reason: reason, into: &outbox)
        writeOutbox()
        closing = true
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).assumeIsolated()
            .whenComplete { _ in context.close(promise: nil) }
        // A peer that does not read gets its connection closed all the same.
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.closeGrace) { context.close(promise: nil) }
    }

    func armIdleTimer(context: ChannelHandlerContext) {
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: lastActivity + Self.idleTimeout) {
            [self] in
            guard let context = self.context, !closing else { return }
            if NIODeadline.now() >= lastActivity + Self.idleTimeout {
                limitHit("closing a silent Firebase connection", metadata: [:])
                closeSocket(code: .goingAway, reason: "idle", context: context)
            } else {
                armIdleTimer(context: context)
            }
        }
    }

    func limitHit(_ message: Logger.Message, metadata: Logger.Metadata) {
        security.limitHit(message, peer: remoteAddress, metadata: metadata, logger: logger)
    }
}
