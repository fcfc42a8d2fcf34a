import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import Logging
import NIOCore
import NIOWebSocket

/// One connection of Firebase's realtime protocol over WebSocket (docs/firebase-sdk.md): the
/// frames become messages (`FirebaseFrameAssembler`), the requests become the engine's
/// operations (`FirebaseInbound`), and the engine's answers and events become the protocol's
/// responses and pushes, each event body encoded once per view and change (`StreamEvents`).
///
/// The engine answers a connection's requests in order, so `pending` says which request each
/// answer is for. A listen's first data arrives before its answer, for a subscription the
/// connection has not heard of yet: it belongs to the listen at the front of `pending`.
///
/// Bounded like the other transports: a message's size (`maxMessageBytes`), the requests waiting
/// for the engine (`maxPipelinedRequests`, then reading stops), the output the peer has not taken
/// (`maxOutboundBytes` and the server's buffer budget: a slow consumer is closed), a peer that
/// takes nothing (`writeStallTimeoutSeconds`) and a silent connection (`idleTimeout`).
final class FirebaseSocketHandler: ChannelDuplexHandler, RemovableChannelHandler, TransportConnection, StallWatching {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = Never
    typealias OutboundOut = WebSocketFrame

    /// A request the engine will answer.
    enum Pending {
        case listen(Int64, FirebaseListenKey, query: JSONValue?)
        /// A write (`p`, `m`): a `datastale` answer pushes the current value at `path` first.
        case write(Int64, path: Path)
        case get(Int64)
        case auth(Int64)
        case signOut(Int64)
        /// An onDisconnect request.
        case plain(Int64)
        /// An unsubscription the connection made itself (an unlisten that came before its
        /// listen's answer, or a listen replaced): its answer goes nowhere.
        case silent
    }

    /// A live listen.
    struct Listen {
        let key: FirebaseListenKey
        /// The query object as the client sent it, for a revocation push.
        let query: JSONValue?
        /// `{"t":"d","d":{"b":{` with the tag: written before each shared push body.
        let prefix: [UInt8]
    }

    let id: UInt64
    let databases: DatabaseRegistry
    /// The database `ns` named (nil: the default one).
    let databaseName: String?
    let configuration: ServerConfiguration
    let security: SecurityState
    let registry: ConnectionRegistry
    let logger: Logger
    let clock: @Sendable () -> Int64
    let decoder: RequestDecoder
    /// The host the client reached, sent back in the hello.
    let host: String
    let session: String

    var context: ChannelHandlerContext?
    var sessionLink: SessionLink?
    /// The database's engine, once the lease is held.
    var engine: Engine?
    var lease: DatabaseRegistry.Lease?
    var admission: ConnectionAdmission
    var writeLimiter: WriteLimits?
    var remoteAddress: String { admission.remoteAddress }

    var assembler: FirebaseFrameAssembler
    /// A text message that arrives in several WebSocket fragments.
    var fragments: [UInt8] = []
    var collectingFragments = false
    /// Messages read before the database was ready.
    var early: [[UInt8]] = []
    var ready = false
    var pending = CircularBuffer<Pending>()
    var listens: [Int: Listen] = [:]
    var subscriptionOf: [FirebaseListenKey: Int] = [:]
    /// Listens whose unlisten arrived before their answer: unsubscribed once it comes.
    var unlistenedEarly: Set<FirebaseListenKey> = []
    /// Signed in with a token that verified (no longer limited to `maxUnauthenticatedBodyBytes`).
    var signedIn = false
    var closing = false
    var readPaused = false
    var wroteSinceFlush = false
    var outputBound = OutputBound()
    var charge = BufferCharge()
    var stallWatch = StallWatch()
    var stallTimer: Scheduled<Void>?
    var idleTimer: Scheduled<Void>?
    var lastActivity = NIODeadline.now()

    /// A connection with no frame either way for this long is closed: the SDKs send a keep-alive
    /// after 45 seconds of silence.
    static let idleTimeout = TimeAmount.seconds(135)

    init(
        id: UInt64, databases: DatabaseRegistry, databaseName: String?, host: String, admission: ConnectionAdmission,
        writeLimiter: WriteLimits?, configuration: ServerConfiguration, security: SecurityState,
        registry: ConnectionRegistry, logger: Logger, clock: @escaping @Sendable () -> Int64
    ) {
        self.id = id
        self.databases = databases
        self.databaseName = databaseName
        self.host = host
        self.admission = admission
        self.writeLimiter = writeLimiter
        self.configuration = configuration
        self.security = security
        self.registry = registry
        self.clock = clock
        self.decoder = RequestDecoder(limits: configuration.limits)
        self.assembler = FirebaseFrameAssembler(maxMessageBytes: configuration.maxMessageBytes)
        var generator = SystemRandomNumberGenerator()
        self.session = String(generator.next() as UInt64, radix: 36) + String(id, radix: 36)
        var logger = logger
        logger[metadataKey: "firebase-connection"] = "\(id)"
        self.logger = logger
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        attach(to: context)
        register(in: registry, channel: context.channel)
        databases.defaultDatabase.engine.metrics.connectionOpened(kind: .firebase)
        armIdleTimer(context: context)
        let channel = context.channel
        let evict: @Sendable () -> Void = { channel.close(promise: nil) }
        if let now = databases.leaseNow(databaseName, connection: true, evict: evict) {
            opened(now, context: context)
        } else {
            databases.lease(databaseName, on: context.eventLoop, connection: true, evict: evict).assumeIsolated()
                .whenComplete { [self] result in
                    guard let context = self.context, !closing else {
                        if case .success(let lease) = result { lease.release() }
                        return
                    }
                    opened(result, context: context)
                }
        }
    }

    /// The database is ready (or cannot be used): the hello, then what was read meanwhile.
    func opened(_ result: Result<DatabaseRegistry.Lease, any Error>, context: ChannelHandlerContext) {
        switch result {
        case .success(let lease):
            self.lease = lease
            engine = lease.engine
            ready = true
            send(FirebaseOutbound.hello(serverTime: clock(), host: host, session: session), context: context)
            let waiting = early
            early = []
            for message in waiting where !closing { handle(message, context: context) }
            flush(context: context)
        case .failure(let error):
            let reason = (error as? DatabaseError)?.message ?? "\(error)"
            logger.debug("refusing a connection", metadata: ["reason": "\(reason)"])
            // `s` (shutdown): the client does not retry a database that cannot be used.
            send(FirebaseOutbound.control("s", reason), context: context)
            closeSocket(code: .policyViolation, context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        stallTimer?.cancel()
        charge.release(from: security.buffers)
        if admission.release(from: security) {}
        databases.defaultDatabase.engine.metrics.connectionClosed(kind: .firebase)
        closing = true
        // The engine runs the connection's onDisconnect operations.
        engine?.submit(.disconnected(sessionID: id))
        lease?.release()
        lease = nil
        registry.remove(id: id)
        detach()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        security.logConnectionError(error, peer: remoteAddress, message: "Firebase connection error", logger: logger)
        context.close(promise: nil)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastActivity = .now()
        switch frame.opcode {
        case .text:
            collectingFragments = !frame.fin
            if frame.fin {
                take(Array(buffer: frame.unmaskedData), context: context)
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
                take(message, context: context)
            }
        case .binary:
            closeSocket(code: .unacceptableData, context: context)
        case .ping:
            var payload = frame.unmaskedData
            let pong = WebSocketFrame(
                fin: true, opcode: .pong, data: payload.readSlice(length: payload.readableBytes) ?? payload)
            context.write(wrapOutboundOut(pong), promise: nil)
            wroteSinceFlush = true
        case .connectionClose:
            closeSocket(code: .normalClosure, context: context)
        default:
            break
        }
    }

    /// One complete text frame.
    func take(_ frame: [UInt8], context: ChannelHandlerContext) {
        guard !closing else { return }
        switch assembler.take(frame) {
        case .pending, .keepAlive:
            break
        case .message(let message):
            if !ready {
                early.append(message)
            } else {
                handle(message, context: context)
            }
        case .oversized(let prefix):
            let error = DatabaseError(
                .tooLarge, "the message exceeds the maximum message size of \(configuration.maxMessageBytes) bytes")
            engine?.metrics.requestRejected(errorCode: error.code)
            if let number = FirebaseInbound.requestNumber(inPrefix: prefix) {
                answerNow(FirebaseOutbound.failure(number, error), context: context)
            } else {
                send(FirebaseOutbound.control("e", error.message), context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context: context)
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if pending.count >= configuration.maxPipelinedRequests || !context.channel.isWritable {
            readPaused = true
        } else {
            context.read()
        }
    }

    func resumeReadingIfNeeded(context: ChannelHandlerContext) {
        if readPaused, pending.count < configuration.maxPipelinedRequests / 2, context.channel.isWritable {
            readPaused = false
            context.read()
        }
    }

    /// One message from the client.
    func handle(_ message: [UInt8], context: ChannelHandlerContext) {
        guard !closing, let engine, let link = sessionLink else { return }
        if !signedIn, !security.isOpen, message.count > security.limits.maxUnauthenticatedBodyBytes {
            let error = DatabaseError(
                .tooLarge,
                "without auth a message may not exceed \(security.limits.maxUnauthenticatedBodyBytes) bytes (maxUnauthenticatedBodyBytes)"
            )
            if let number = FirebaseInbound.requestNumber(inPrefix: Array(message.prefix(64))) {
                answerNow(FirebaseOutbound.failure(number, error), context: context)
            }
            return
        }
        let inbound: FirebaseInbound
        do {
            inbound = try FirebaseInbound.decode(message, decoder: decoder)
        } catch {
            send(FirebaseOutbound.control("e", error.message), context: context)
            return
        }
        switch inbound {
        case .control(let type):
            // `p` is a ping; the transport-upgrade messages (`a`, `n`) need no answer here.
            if type == "p" { send(FirebaseOutbound.pong, context: context) }
        case .refused(let number, let error):
            engine.metrics.requestRejected(errorCode: error.code)
            answerNow(FirebaseOutbound.failure(number, error), context: context)
        case .request(let number, let request):
            serve(request, number: number, engine: engine, link: link, context: context)
        }
    }

    func serve(
        _ request: FirebaseRequest, number: Int64, engine: Engine, link: SessionLink, context: ChannelHandlerContext
    ) {
        switch request {
        case .stats, .appCheck:
            answerNow(FirebaseOutbound.ok(number), context: context)
        case .listen(let key, let query, let operation):
            if let old = subscriptionOf[key] {
                // The same listen again: the new one replaces it.
                forget(sub: old)
                submit(.unsubscribe(sub: old), pending: .silent, engine: engine, link: link)
            }
            unlistenedEarly.remove(key)
            submit(operation, pending: .listen(number, key, query: query), engine: engine, link: link)
        case .unlisten(let key):
            if let sub = subscriptionOf[key] {
                forget(sub: sub)
                submit(.unsubscribe(sub: sub), pending: .silent, engine: engine, link: link)
            } else if pending.contains(where: { if case .listen(_, key, _) = $0 { true } else { false } }) {
                unlistenedEarly.insert(key)
            }
            answerNow(FirebaseOutbound.ok(number), context: context)
        case .operation(let operation, let path):
            if case .write = operation, let refusal = writeLimiter?.take() {
                security.noticeLog.notice(logger, "write rate limit", metadata: ["peer": "\(remoteAddress)"])
                answerNow(FirebaseOutbound.failure(number, security.writeRateExceeded(refusal)), context: context)
                return
            }
            let kind: Pending
            switch operation {
            case .write: kind = .write(number, path: path)
            case .get: kind = .get(number)
            default: kind = .plain(number)
            }
            submit(operation, pending: kind, engine: engine, link: link)
        case .auth(let token):
            let databaseSecrets = configuration.databases.settings(
                for: databaseName ?? configuration.databases.defaultName
            ).adminSecrets
            let step: AuthStep
            switch security.authenticate(
                token, from: remoteAddress, now: clock(), logger: logger, databaseSecrets: databaseSecrets)
            {
            case .success(let identity):
                signedIn = true
                step = .verified(identity)
            case .failure(let error):
                step = .refused(error)
            }
            submit(.auth(step), pending: .auth(number), engine: engine, link: link)
        case .unauth:
            submit(.auth(.signOut), pending: .signOut(number), engine: engine, link: link)
        }
    }

    func submit(_ operation: HearthProtocol.Operation, pending entry: Pending, engine: Engine, link: SessionLink) {
        pending.append(entry)
        engine.submit(.request(link, Request(id: .null, operation: operation)))
    }

    /// Drops what the connection knows of a subscription it ends.
    func forget(sub: Int) {
        if let listen = listens.removeValue(forKey: sub) { subscriptionOf[listen.key] = nil }
    }

    // MARK: Shutdown

    func beginShutdown() {
        guard let context, !closing else { return }
        closeSocket(code: .goingAway, context: context)
    }

    /// Sends a close frame with `code` and closes once it is written.
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
        // A peer that does not read gets its connection closed all the same.
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.closeGrace) { context.close(promise: nil) }
    }

    /// How long a closing connection's last frames have to leave.
    static let closeGrace = TimeAmount.seconds(2)

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
