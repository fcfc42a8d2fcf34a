import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import Logging
import NIOCore

/// One client connection: decodes request lines, hands them to the engine, and writes
/// responses in request order and events as they come, within a bounded outbox.
///
/// Responses are kept in order with a queue of slots: a request the engine must answer takes a
/// waiting slot; a line rejected here takes a slot that is ready at once. The engine answers a
/// connection's requests in order, so each engine response fills the front waiting slot.
///
/// A peer that does not take its output is held back rather than fed (docs/security.md
/// "Memory"): once about `pauseBytes` wait to be sent, the engine's further output waits in
/// `deferred` — answers unencoded, as the cheap references to the tree they are — and the
/// connection stops reading requests. A peer that takes nothing for `writeStallTimeoutSeconds`
/// is disconnected, and one whose events pile up past `maxOutboundBytes`, or past its share
/// while the server's `BufferBudget` is spent, is closed as a slow consumer.
final class ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, TransportConnection, StallWatching {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    enum Slot {
        case awaitingEngine
        /// A database request the connection answers itself (`use`, the admins' lifecycle
        /// requests); always the last slot, since the lines after it wait (`heldLines`).
        case awaitingServer
        case ready([UInt8])
    }

    let id: UInt64
    /// The engine of the connection's database: the default one's, or the one `use` chose.
    @exclusivity(unchecked) var engine: Engine
    let databases: DatabaseRegistry
    /// The connection's hold on the database `use` chose (nil: the default database).
    var lease: DatabaseRegistry.Lease?
    /// The metrics the connection was counted in when it opened.
    let connectionMetrics: ServerMetrics
    /// Request lines decoded so far (`use` must be the first).
    @exclusivity(unchecked) var linesDecoded = 0
    /// Lines read while a database request is being answered: they wait for its answer (a `use`
    /// decides which engine they go to), then are handled in order.
    @exclusivity(unchecked) var heldLines: CircularBuffer<[UInt8]> = []
    @exclusivity(unchecked) var holdingLines = false
    /// The connection deleted its own database: it closes once that answer is out.
    @exclusivity(unchecked) var closesAfterAnswer = false
    /// Signed in with a server-wide admin credential (database lifecycle requests need one).
    @exclusivity(unchecked) var serverAdmin = false
    /// Hands the engine this loop's submissions together (nil: straight to the engine).
    let gatherer: SubmissionGatherer?
    /// Whether the server is a cluster node (its decoder may keep request text to forward).
    let clustered: Bool
    // Properties every request touches are `@exclusivity(unchecked)`: only the channel's event
    // loop touches them, and no access calls code that could reach them again (see `Engine`).
    @exclusivity(unchecked) var decoder: RequestDecoder
    /// The last path this connection sent (`PathMemo`), handed out as copies unless
    /// `sharesPaths`.
    let paths = PathMemo(copies: !ConnectionHandler.sharesPaths)
    /// The JSON parser's stacks, reused from one request line to the next.
    @exclusivity(unchecked) var parseWorkspace = JSONParseWorkspace()
    /// Splits the input into lines (here rather than in a handler of its own: one pipeline hop
    /// fewer per line).
    @exclusivity(unchecked) var framer: LineFramer
    let configuration: ServerConfiguration
    let security: SecurityState
    let logger: Logger
    let registry: ConnectionRegistry
    let clock: @Sendable () -> Int64

    @exclusivity(unchecked) var slots = CircularBuffer<Slot>()
    @exclusivity(unchecked) var waitingForEngine = 0
    /// The requests read since the last submission, which go to the engine as one run
    /// (`Submission.requests`), and the room the next run starts with: as much as the last
    /// one's, up to a slice (a pipelined burst's runs are full slices). An unpipelined client's
    /// one request waits in `single` and goes as `Submission.request`, without an array.
    @exclusivity(unchecked) var single: Request?
    @exclusivity(unchecked) var requests: [Request] = []
    @exclusivity(unchecked) var runCapacity = 2
    @exclusivity(unchecked) var readPaused = false
    @exclusivity(unchecked) var closing = false
    @exclusivity(unchecked) var closeWhenIdle = false
    /// Close once the outboxes waiting for writability are written and have reached the socket.
    var closeWhenDrained = false
    var context: ChannelHandlerContext?
    /// Output gathered during one event-loop turn, written with one write and one flush.
    @exclusivity(unchecked) var outbox = ByteBuffer()
    /// The outbox's other buffer: a flush hands the outbox to the channel and gathers into this
    /// one, and once the channel has written the bytes (as it does at once with small answers),
    /// their buffer becomes the spare. So an answer allocates no buffer of its own.
    @exclusivity(unchecked) var spareOutbox: ByteBuffer?
    /// Outboxes waiting for the channel to become writable, so that the channel itself holds
    /// little: a `slow_consumer` event then goes out right after the lines already handed to it.
    @exclusivity(unchecked) var waiting = CircularBuffer<ByteBuffer>()
    @exclusivity(unchecked) var waitingBytes = 0
    /// Set once the connection is closing as a slow consumer.
    var slowConsumerClose: Scheduled<Void>?
    /// Reused encoding buffer for responses.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    @exclusivity(unchecked) var sessionLink: SessionLink?
    /// Where the connection comes from, and whether it is counted under the connection limits.
    var admission = ConnectionAdmission()
    /// The remote IP address (without port), for per-address limits and logs.
    var remoteAddress: String { admission.remoteAddress }
    @exclusivity(unchecked) var writeLimiter: WriteLimits?
    /// Authenticated with the cluster secret (a peer node).
    @exclusivity(unchecked) var isPeer = false
    /// Closes the connection unless it authenticates in time (`authTimeoutSeconds`).
    var authDeadline: Scheduled<Void>?
    /// Closes the connection unless it sends a whole request line in time
    /// (`firstRequestTimeoutSeconds`).
    var firstRequestDeadline: Scheduled<Void>?
    /// Signed in with a token that verified (not limited to `maxUnauthenticatedBodyBytes`).
    @exclusivity(unchecked) var signedIn = false
    /// The engine's output that waits for the peer to take what was sent before it, in order.
    @exclusivity(unchecked) var deferred = CircularBuffer<Outbound>()
    /// The bytes of the encoded events in `deferred`.
    @exclusivity(unchecked) var deferredBytes = 0
    /// `maxOutboundBytes` and the server's `BufferBudget`, with the allowance of one large answer
    /// or event (cleared once the peer has taken it).
    @exclusivity(unchecked) var outputBound = OutputBound()
    /// This connection's share of the server's `BufferBudget`: output, and an unfinished line.
    @exclusivity(unchecked) var outputCharge = BufferCharge()
    @exclusivity(unchecked) var inputCharge = BufferCharge()
    /// Whether the peer takes the output, checked while the channel is unwritable.
    @exclusivity(unchecked) var stallWatch = StallWatch()
    var stallTimer: Scheduled<Void>?
    /// Retries `deferred` answers held back while the server's buffers were spent.
    var budgetRetry: Scheduled<Void>?
    /// Bytes read since the connection opened, and at the start of the current pace window of
    /// an unfinished line.
    @exclusivity(unchecked) var inputBytes = 0
    @exclusivity(unchecked) var inputBytesAtWindowStart = 0
    var paceTimer: Scheduled<Void>?

    /// `maxLineBytes`: the longest line framed (longer ones are answered `too_large`).
    init(
        id: UInt64, databases: DatabaseRegistry, gatherer: SubmissionGatherer?, configuration: ServerConfiguration,
        security: SecurityState, registry: ConnectionRegistry, maxLineBytes: Int, logger: Logger,
        clock: @escaping @Sendable () -> Int64
    ) {
        self.id = id
        self.framer = LineFramer(maxLength: maxLineBytes)
        self.databases = databases
        self.engine = databases.defaultDatabase.engine
        self.connectionMetrics = engine.metrics
        self.gatherer = gatherer
        self.configuration = configuration
        self.security = security
        self.clustered = configuration.cluster != nil || engine.replicator != nil
        self.decoder = RequestDecoder(limits: configuration.limits, keepsSource: clustered)
        self.registry = registry
        self.clock = clock
        var logger = logger
        logger[metadataKey: "connection"] = "\(id)"
        self.logger = logger
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) { attach(to: context) }

    func handlerRemoved(context: ChannelHandlerContext) { detach() }

    func channelActive(context: ChannelHandlerContext) {
        logger.debug("connected", metadata: ["peer": "\(context.remoteAddress.map { "\($0)" } ?? "?")"])
        let admitted = admission.admit(context.remoteAddress, security: security)
        if let refusal = admitted.refusal {
            limitHit("connection refused", metadata: ["reason": "\(refusal)"])
            refuse(DatabaseError(.overloaded, refusal), context: context)
            return
        }
        writeLimiter = admitted.writeLimits
        connectionMetrics.connectionOpened(kind: .tcp)
        let hello = ResponseEncoder.hello(
            server: configuration.serverName, serverTime: clock(), connection: String(id),
            warning: security.helloWarning, cluster: engine.clusterObject())
        send(hello, context: context)
        flushOutbox(context: context)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        register(in: registry, channel: context.channel) { line in bound.value.sendServerLine(line) }
        let firstRequest = security.limits.firstRequestTimeoutSeconds
        firstRequestDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(Int64(firstRequest))) {
            [self] in
            guard let context = self.context else { return }
            limitHit("closing a connection that sent no request in time", metadata: [:])
            refuse(
                DatabaseError(.badRequest, "no request within \(firstRequest) s (firstRequestTimeoutSeconds)"),
                context: context)
        }
        let timeout = security.limits.authTimeoutSeconds
        if timeout > 0, !security.isOpen {
            authDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(Int64(timeout))) { [self] in
                guard let context = self.context else { return }
                limitHit("closing a connection that did not authenticate in time", metadata: [:])
                refuse(
                    DatabaseError(.unauthenticated, "no successful auth within \(timeout) s (authTimeoutSeconds)"),
                    context: context)
            }
        }
        context.fireChannelActive()
    }

    /// Sends one `error` event and closes, before anything else reaches the engine.
    func refuse(_ error: DatabaseError, context: ChannelHandlerContext) {
        closing = true
        outbox.clear()
        let line = ResponseEncoder.errorEvent(error)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: line)), promise: nil)
        context.close(promise: nil)
    }

    func limitHit(_ message: Logger.Message, metadata: Logger.Metadata) {
        security.limitHit(message, peer: remoteAddress, metadata: metadata, logger: logger)
    }

    func channelInactive(context: ChannelHandlerContext) {
        slowConsumerClose?.cancel()
        authDeadline?.cancel()
        firstRequestDeadline?.cancel()
        stallTimer?.cancel()
        budgetRetry?.cancel()
        paceTimer?.cancel()
        outputCharge.release(from: security.buffers)
        inputCharge.release(from: security.buffers)
        deferred.removeAll()
        if admission.release(from: security) { connectionMetrics.connectionClosed(kind: .tcp) }
        closing = true
        heldLines.removeAll()
        submitBatch(then: .disconnected(sessionID: id))
        lease?.release()
        lease = nil
        registry.remove(id: id)
        logger.debug("disconnected")
        context.fireChannelInactive()
    }

    /// A client that shuts down its sending side still gets every answer, then the close.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if slowConsumerClose != nil, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            submitBatch()
            closeAfterPendingResponses(context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        security.logConnectionError(error, peer: remoteAddress, message: "connection error", logger: logger)
        context.close(promise: nil)
    }

    /// Whether a connection hands a request naming its last path that same path (`PathMemo`)
    /// rather than a copy. It is a trade between two costs of memory that both the connection's
    /// thread and the engine's touch: a new path per request is freed on the engine's thread,
    /// which glibc's malloc serves under the allocating arena's lock; one shared path has both
    /// threads counting references on it for every request, which under jemalloc (whose frees
    /// take no such lock) costs more than a new path does. So: shared under glibc only.
    static let sharesPaths = !Allocator.freesAcrossThreadsCheaply

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A cluster node keeps each request's text in case it must forward it, unless it leads.
        if clustered { decoder.keepsSource = !engine.isLeading }
        let buffer = unwrapInboundIn(data)
        inputBytes &+= buffer.readableBytes
        let limit = security.limits.maxUnauthenticatedBodyBytes
        if !signedIn, framer.partialBytes + buffer.readableBytes > limit, !isPeer, !closing, !security.isOpen {
            // Refused before it is gathered: a line that does not end within the bound.
            let room = max(0, limit - framer.partialBytes)
            if !buffer.readableBytesView.prefix(room + 1).contains(UInt8(ascii: "\n")) {
                notePartialLine(framer.partialBytes + buffer.readableBytes, context: context)
                return
            }
        }
        framer.rawFrames(in: buffer) { frame in received(frame, context: context) }
        let partial = framer.partialBytes
        if partial > 0 {
            notePartialLine(partial, context: context)
        } else if inputCharge.bytes > 0 {
            inputCharge.update(0, in: security.buffers)
        }
    }

    /// An unfinished request line is held to the same rules as an HTTP body: with rules, one
    /// from a caller who has not signed in may not grow past `maxUnauthenticatedBodyBytes`; a
    /// large one counts in the server's `BufferBudget`; and it must keep arriving at
    /// `minBodyBytesPerSecond`.
    func notePartialLine(_ partial: Int, context: ChannelHandlerContext) {
        guard !closing, !isPeer else { return }
        let limits = security.limits
        if !signedIn, partial > limits.maxUnauthenticatedBodyBytes, !security.isOpen {
            limitHit("refusing a long line from a client that has not signed in", metadata: [:])
            refuse(
                DatabaseError(
                    .tooLarge,
                    "without auth a line may not exceed \(limits.maxUnauthenticatedBodyBytes) bytes (maxUnauthenticatedBodyBytes)"
                ), context: context)
            return
        }
        if partial > BufferBudget.smallHolding {
            if partial > inputCharge.bytes, !security.buffers.hasRoom(for: partial - inputCharge.bytes) {
                limitHit("refusing a long line while the server's buffers are full", metadata: [:])
                refuse(
                    DatabaseError(
                        .overloaded,
                        "the server is holding as much for its clients as it may (maxBufferedBytes); try again shortly",
                        retryAfterMs: 1000), context: context)
                return
            }
            inputCharge.update(partial, in: security.buffers)
        }
        if paceTimer == nil { armPaceTimer(context: context) }
    }

    /// Judges an unfinished line's pace over a window of ten seconds (or the first-request
    /// timeout, when shorter).
    func armPaceTimer(context: ChannelHandlerContext) {
        let limits = security.limits
        inputBytesAtWindowStart = inputBytes
        paceTimer = context.eventLoop.assumeIsolated().scheduleTask(in: limits.paceWindow) { [self] in
            paceTimer = nil
            guard let context = self.context, !closing, framer.partialBytes > 0 else { return }
            if limits.isTooSlow(inputBytes &- inputBytesAtWindowStart) {
                limitHit("closing a connection whose request line stalled", metadata: [:])
                refuse(
                    DatabaseError(
                        .badRequest,
                        "the request line arrived slower than \(limits.minBodyBytesPerSecond) bytes a second (minBodyBytesPerSecond)"
                    ), context: context)
                return
            }
            armPaceTimer(context: context)
        }
    }

    func received(_ frame: RawLineFrame, context: ChannelHandlerContext) {
        guard !closing, !closeWhenIdle else { return }
        if holdingLines {
            switch frame {
            case .line(let line): heldLines.append(Array(line))
            case .tooLarge: refuseTooLarge(context: context)
            }
            return
        }
        switch frame {
        case .tooLarge:
            refuseTooLarge(context: context)
        case .line(let line) where line.count > configuration.maxMessageBytes && !isPeer:
            // Only a clustered listener frames lines this long: they are for peers.
            refuseTooLarge(context: context)
        case .line(let line)
        where !signedIn && line.count > security.limits.maxUnauthenticatedBodyBytes && !isPeer && !security.isOpen:
            let error = DatabaseError(
                .tooLarge,
                "without auth a line may not exceed \(security.limits.maxUnauthenticatedBodyBytes) bytes (maxUnauthenticatedBodyBytes)"
            )
            var bytes: [UInt8] = []
            ResponseEncoder.encode(id: .null, .failure(error), into: &bytes)
            engine.metrics.requestRejected(errorCode: error.code)
            enqueueReady(bytes, context: context)
        case .line(let line):
            if let deadline = firstRequestDeadline {
                deadline.cancel()
                firstRequestDeadline = nil
            }
            let result = decoder.decode(line, reusing: &parseWorkspace, paths: paths)
            linesDecoded &+= 1
            switch result.flatMap(admit) {
            case .success(let request):
                if case .database(let databaseRequest) = request.operation {
                    answer(databaseRequest, id: request.id, context: context)
                    return
                }
                if case .cluster(.replicaAck(let rev)) = request.operation {
                    // A replica's acknowledgement gets no answer, so it takes no slot. What it
                    // confirms is released here, without waiting for the engine's turn; the
                    // engine takes it at its next turn.
                    guard let sessionLink else { return }
                    engine.confirmations.acknowledged(stream: sessionLink.id, rev: rev, now: clock())
                    engine.acknowledgementArrived(on: context.eventLoop)
                    return
                }
                slots.append(.awaitingEngine)
                waitingForEngine += 1
                guard sessionLink != nil else { return }
                if requests.isEmpty, single == nil {
                    single = request
                } else {
                    if requests.capacity == 0 { requests.reserveCapacity(runCapacity) }
                    if let first = single.take() { requests.append(first) }
                    requests.append(request)
                    if requests.count >= Submission.burstSlice { submitBatch(now: true) }
                }
            case .failure(let failure):
                var bytes: [UInt8] = []
                ResponseEncoder.encode(id: failure.id, .failure(failure.error), into: &bytes)
                engine.metrics.requestRejected(errorCode: failure.error.code)
                enqueueReady(bytes, context: context)
            }
        }
    }

    /// A line over `maxMessageBytes`: answered `too_large`, and the connection closed.
    func refuseTooLarge(context: ChannelHandlerContext) {
        let error = DatabaseError(
            .tooLarge, "line exceeds the maximum message size of \(configuration.maxMessageBytes) bytes")
        var bytes: [UInt8] = []
        ResponseEncoder.encode(id: .null, .failure(error), into: &bytes)
        engine.metrics.requestRejected(errorCode: error.code)
        enqueueReady(bytes, context: context)
        submitBatch()
        flushOutbox(context: context)
        closeAfterPendingResponses(context: context)
    }

    /// What this connection settles before the engine sees a request: tokens are verified here,
    /// off the engine thread (with failed attempts throttled per address), and writes pass the
    /// connection's rate limit.
    func admit(_ request: Request) -> Result<Request, RequestDecoder.Failure> {
        switch request.operation {
        case .auth(.token(let token)) where security.isClusterSecret(token):
            isPeer = true
            authDeadline?.cancel()
            authDeadline = nil
            return .success(Request(id: request.id, operation: .auth(.peer)))
        case .auth(.token(let token)):
            let databaseSecrets = configuration.databases.settings(
                for: lease?.database.name.text ?? configuration.databases.defaultName
            ).adminSecrets
            let databaseAdmin = SecurityState.isOneOf(databaseSecrets, token)
            switch security.authenticate(
                token, from: remoteAddress, now: clock(), logger: logger, databaseSecrets: databaseSecrets)
            {
            case .success(let identity):
                authDeadline?.cancel()
                authDeadline = nil
                signedIn = true
                serverAdmin = identity.isAdmin && !databaseAdmin
                return .success(Request(id: request.id, operation: .auth(.verified(identity))))
            case .failure(let error):
                serverAdmin = false
                return .success(Request(id: request.id, operation: .auth(.refused(error))))
            }
        case .auth(.signOut):
            serverAdmin = false
            return .success(request)
        case .write, .push:
            if let refusal = writeLimiter?.take() {
                security.noticeLog.notice(logger, "write rate limit", metadata: ["peer": "\(remoteAddress)"])
                let error = security.writeRateExceeded(refusal)
                return .failure(RequestDecoder.Failure(id: request.id, error: error))
            }
            return .success(request)
        default:
            return .success(request)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        submitBatch()
        flushOutbox(context: context)
    }

    /// Hands what was read since the last submission to the engine, and `last` after it: at the
    /// end of a read, gathered with the loop's other connections', or `now` once a burst has
    /// `Submission.burstSlice` requests.
    func submitBatch(now: Bool = false, then last: Submission? = nil) {
        var items: [Submission] = []
        if let sessionLink {
            if let request = single.take() {
                items.append(.request(sessionLink, request))
            } else if !requests.isEmpty {
                runCapacity = Swift.min(requests.count, Submission.burstSlice)
                items.append(.requests(sessionLink, requests))
                requests = []  // the engine's now; the next run gets room of its own
            }
        }
        if let last { items.append(last) }
        guard !items.isEmpty else { return }
        if let gatherer {
            if now { gatherer.submitNow(items) } else { gatherer.submit(items) }
        } else {
            engine.submit(items)
        }
    }

    // MARK: Backpressure on reads

    func read(context: ChannelHandlerContext) {
        // A closing slow consumer's input is read and dropped: unread input would make the
        // close a reset, which discards the `slow_consumer` event still in the socket buffer.
        if slowConsumerClose == nil,
            waitingForEngine >= configuration.maxPipelinedRequests || !waiting.isEmpty || !deferred.isEmpty
                || holdingLines
        {
            readPaused = true
        } else {
            context.read()
        }
    }

    func resumeReadingIfNeeded(context: ChannelHandlerContext) {
        if readPaused, waitingForEngine < configuration.maxPipelinedRequests / 2, waiting.isEmpty, deferred.isEmpty,
            !holdingLines
        {
            readPaused = false
            context.read()
        }
    }

    // MARK: Shutdown

    /// Stops reading, sends `goaway`, and closes once every accepted request is answered.
    func beginShutdown() {
        guard let context, !closing else { return }
        submitBatch()
        send(ResponseEncoder.goaway, context: context)
        flushOutbox(context: context)
        closeAfterPendingResponses(context: context)
    }

    func closeAfterPendingResponses(context: ChannelHandlerContext) {
        closeWhenIdle = true
        if slots.isEmpty { closeOnceDrained(context: context) }
    }

    /// Closes after the bytes already written have left, so that the last answers arrive.
    func closeOnceDrained(context: ChannelHandlerContext) {
        flushOutbox(context: context)
        if waiting.isEmpty {
            closeAfterWritten(context: context)
        } else {
            closeWhenDrained = true
        }
    }
}

/// Writes `value` in decimal at the start of `buffer` (at least 20 bytes) and returns the bytes
/// written.
func writeDecimal(_ value: Int, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
    var count = 0
    if value < 0 {
        buffer[0] = UInt8(ascii: "-")
        count = 1
    }
    var rest = value.magnitude
    var scale: UInt = 1
    while rest / scale >= 10 { scale *= 10 }
    while scale > 0 {
        buffer[count] = UInt8(ascii: "0") + UInt8(rest / scale)
        count += 1
        rest %= scale
        scale /= 10
    }
    return count
}
