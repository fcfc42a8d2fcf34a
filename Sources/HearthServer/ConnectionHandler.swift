import HearthCore
import HearthJSON
import HearthProtocol
import Logging
import NIOCore
import NIOSSL

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
final class ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    private enum Slot {
        case awaitingEngine
        case ready([UInt8])
    }

    private let id: UInt64
    private let engine: Engine
    /// Hands the engine this loop's submissions together (nil: straight to the engine).
    private let gatherer: SubmissionGatherer?
    /// Whether the server is a cluster node (its decoder may keep request text to forward).
    private let clustered: Bool
    // Properties every request touches are `@exclusivity(unchecked)`: only the channel's event
    // loop touches them, and no access calls code that could reach them again (see `Engine`).
    @exclusivity(unchecked) private var decoder: RequestDecoder
    /// The last path this connection sent (`PathMemo`), handed out as copies unless
    /// `sharesPaths`.
    private let paths = PathMemo(copies: !ConnectionHandler.sharesPaths)
    /// The JSON parser's stacks, reused from one request line to the next.
    @exclusivity(unchecked) private var parseWorkspace = JSONParseWorkspace()
    /// Splits the input into lines (here rather than in a handler of its own: one pipeline hop
    /// fewer per line).
    @exclusivity(unchecked) private var framer: LineFramer
    private let configuration: ServerConfiguration
    private let security: SecurityState
    private let logger: Logger
    private let registry: ConnectionRegistry
    private let clock: @Sendable () -> Int64

    @exclusivity(unchecked) private var slots = CircularBuffer<Slot>()
    @exclusivity(unchecked) private var waitingForEngine = 0
    /// The requests read since the last submission, which go to the engine as one run
    /// (`Submission.requests`), and the room the next run starts with: as much as the last
    /// one's, up to a slice (a pipelined burst's runs are full slices). An unpipelined client's
    /// one request waits in `single` and goes as `Submission.request`, without an array.
    @exclusivity(unchecked) private var single: Request?
    @exclusivity(unchecked) private var requests: [Request] = []
    @exclusivity(unchecked) private var runCapacity = 2
    @exclusivity(unchecked) private var readPaused = false
    @exclusivity(unchecked) private var closing = false
    @exclusivity(unchecked) private var closeWhenIdle = false
    /// Close once the outboxes waiting for writability are written and have reached the socket.
    private var closeWhenDrained = false
    private var context: ChannelHandlerContext?
    /// Output gathered during one event-loop turn, written with one write and one flush.
    @exclusivity(unchecked) private var outbox = ByteBuffer()
    /// The outbox's other buffer: a flush hands the outbox to the channel and gathers into this
    /// one, and once the channel has written the bytes (as it does at once with small answers),
    /// their buffer becomes the spare. So an answer allocates no buffer of its own.
    @exclusivity(unchecked) private var spareOutbox: ByteBuffer?
    /// Outboxes waiting for the channel to become writable, so that the channel itself holds
    /// little: a `slow_consumer` event then goes out right after the lines already handed to it.
    @exclusivity(unchecked) private var waiting = CircularBuffer<ByteBuffer>()
    @exclusivity(unchecked) private var waitingBytes = 0
    /// Set once the connection is closing as a slow consumer.
    private var slowConsumerClose: Scheduled<Void>?
    /// Reused encoding buffer for responses.
    @exclusivity(unchecked) private var scratch: [UInt8] = []
    @exclusivity(unchecked) private var sessionLink: SessionLink?
    /// The remote IP address (without port), for per-address limits and logs.
    private var remoteAddress = "?"
    /// Counted in `security.connections` (so released at close).
    private var admitted = false
    @exclusivity(unchecked) private var writeLimiter: WriteLimits?
    /// Authenticated with the cluster secret (a peer node).
    @exclusivity(unchecked) private var isPeer = false
    /// Closes the connection unless it authenticates in time (`authTimeoutSeconds`).
    private var authDeadline: Scheduled<Void>?
    /// Closes the connection unless it sends a whole request line in time
    /// (`firstRequestTimeoutSeconds`).
    private var firstRequestDeadline: Scheduled<Void>?
    /// Signed in with a token that verified (not limited to `maxUnauthenticatedBodyBytes`).
    private var signedIn = false
    /// The engine's output that waits for the peer to take what was sent before it, in order.
    @exclusivity(unchecked) private var deferred = CircularBuffer<Outbound>()
    /// The bytes of the encoded events in `deferred`.
    private var deferredBytes = 0
    /// One answer or event larger than `pauseBytes`, sent when little else was waiting, may take
    /// the connection past `maxOutboundBytes` by its own size: a large answer is not a slow
    /// consumer. Cleared once the peer has taken it.
    private var answerAllowance = 0
    /// This connection's share of the server's `BufferBudget`: output, and an unfinished line.
    private var outputCharge = BufferCharge()
    private var inputCharge = BufferCharge()
    /// Whether the peer takes the output, checked while the channel is unwritable.
    private var progress = OutputProgress()
    private var stallTimer: Scheduled<Void>?
    /// Retries `deferred` answers held back while the server's buffers were spent.
    private var budgetRetry: Scheduled<Void>?
    /// Bytes read since the connection opened, and at the start of the current pace window of
    /// an unfinished line.
    @exclusivity(unchecked) private var inputBytes = 0
    private var inputBytesAtWindowStart = 0
    private var paceTimer: Scheduled<Void>?

    /// `maxLineBytes`: the longest line framed (longer ones are answered `too_large`).
    init(
        id: UInt64, engine: Engine, gatherer: SubmissionGatherer?, configuration: ServerConfiguration,
        security: SecurityState, registry: ConnectionRegistry, maxLineBytes: Int, logger: Logger,
        clock: @escaping @Sendable () -> Int64
    ) {
        self.id = id
        self.framer = LineFramer(maxLength: maxLineBytes)
        self.engine = engine
        self.gatherer = gatherer
        self.configuration = configuration
        self.security = security
        self.clustered = configuration.cluster != nil || engine.clusterHooks != nil
        self.decoder = RequestDecoder(limits: configuration.limits, keepsSource: clustered)
        self.registry = registry
        self.clock = clock
        var logger = logger
        logger[metadataKey: "connection"] = "\(id)"
        self.logger = logger
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        sessionLink = SessionLink(id: id, loop: loop) { outputs in bound.value.receive(outputs) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // Breaks the cycle handler → link → handler.
        self.context = nil
        sessionLink = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        logger.debug("connected", metadata: ["peer": "\(context.remoteAddress.map { "\($0)" } ?? "?")"])
        remoteAddress = context.remoteAddress?.ipAddress ?? "?"
        // A peer without an IP address (a Unix socket) counts as local.
        let local = isLoopback(remoteAddress) || remoteAddress == "?"
        if let refusal = security.connections.admit(remoteAddress, isLoopback: local, limits: security.limits) {
            limitHit("connection refused", metadata: ["reason": "\(refusal)"])
            refuse(DatabaseError(.overloaded, refusal), context: context)
            return
        }
        admitted = true
        writeLimiter = WriteLimits(security: security, address: remoteAddress, isLoopback: local)
        engine.metrics.connectionOpened(kind: .tcp)
        let hello = ResponseEncoder.hello(
            server: configuration.serverName, serverTime: clock(), connection: String(id),
            warning: security.helloWarning, cluster: engine.clusterObject())
        send(hello, context: context)
        flushOutbox(context: context)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        registry.add(
            id: id, channel: context.channel, beginShutdown: { bound.value.beginShutdown() },
            sendLine: { line in bound.value.sendServerLine(line) })
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
    private func refuse(_ error: DatabaseError, context: ChannelHandlerContext) {
        closing = true
        outbox.clear()
        let line = ResponseEncoder.errorEvent(error)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: line)), promise: nil)
        context.close(promise: nil)
    }

    private func limitHit(_ message: Logger.Message, metadata: Logger.Metadata) {
        security.counters.limitHits.add(1)
        security.noticeLog.notice(
            logger, message, metadata: metadata.merging(["peer": "\(remoteAddress)"]) { a, _ in a })
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
        if admitted {
            admitted = false
            security.connections.release(remoteAddress)
            engine.metrics.connectionClosed(kind: .tcp)
        }
        closing = true
        submitBatch(then: .disconnected(sessionID: id))
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
        if error is NIOSSLError || error is BoringSSLError {
            security.noticeLog.notice(
                logger, "TLS handshake failed (a plain-text client, or an untrusted certificate?)",
                metadata: ["peer": "\(remoteAddress)", "error": "\(error)"])
        } else {
            logger.debug("connection error", metadata: ["error": "\(error)"])
        }
        context.close(promise: nil)
    }

    /// Whether a connection hands a request naming its last path that same path (`PathMemo`)
    /// rather than a copy. It is a trade between two costs of memory that both the connection's
    /// thread and the engine's touch (BENCHMARKS.md "Nineteenth pass"): a new path per request
    /// is freed on the engine's thread, which glibc's malloc serves under the allocating arena's
    /// lock (parsing each request's path, pipelined writes ran 0.77 × as fast); one shared path
    /// has both threads counting references on it for every request, which under jemalloc
    /// (whose frees take no such lock) costs more than a new path does (1.10 × as fast). So:
    /// shared under glibc only.
    static let sharesPaths = !Allocator.freesAcrossThreadsCheaply

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A cluster node keeps each request's text in case it must forward it, unless it leads.
        if clustered { decoder.keepsSource = !engine.isLeading }
        let buffer = unwrapInboundIn(data)
        inputBytes &+= buffer.readableBytes
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
    private func notePartialLine(_ partial: Int, context: ChannelHandlerContext) {
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
    private func armPaceTimer(context: ChannelHandlerContext) {
        let limits = security.limits
        let window = min(HTTPConnectionHandler.bodyPaceWindow, .seconds(Int64(limits.firstRequestTimeoutSeconds)))
        inputBytesAtWindowStart = inputBytes
        paceTimer = context.eventLoop.assumeIsolated().scheduleTask(in: window) { [self] in
            paceTimer = nil
            guard let context = self.context, !closing, framer.partialBytes > 0 else { return }
            let needed = Int64(limits.minBodyBytesPerSecond) * window.nanoseconds / 1_000_000_000
            if Int64(inputBytes &- inputBytesAtWindowStart) < max(1, needed) {
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

    private func received(_ frame: RawLineFrame, context: ChannelHandlerContext) {
        guard !closing, !closeWhenIdle else { return }
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
            switch result.flatMap(admit) {
            case .success(let request):
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
    private func refuseTooLarge(context: ChannelHandlerContext) {
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
    private func admit(_ request: Request) -> Result<Request, RequestDecoder.Failure> {
        switch request.operation {
        case .auth(.token(let token)) where security.isClusterSecret(token):
            isPeer = true
            authDeadline?.cancel()
            authDeadline = nil
            return .success(Request(id: request.id, operation: .auth(.peer)))
        case .auth(.token(let token)):
            switch security.authenticate(token, from: remoteAddress, now: clock(), logger: logger) {
            case .success(let identity):
                authDeadline?.cancel()
                authDeadline = nil
                signedIn = true
                return .success(Request(id: request.id, operation: .auth(.verified(identity))))
            case .failure(let error):
                return .success(Request(id: request.id, operation: .auth(.refused(error))))
            }
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
    private func submitBatch(now: Bool = false, then last: Submission? = nil) {
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
        {
            readPaused = true
        } else {
            context.read()
        }
    }

    private func resumeReadingIfNeeded(context: ChannelHandlerContext) {
        if readPaused, waitingForEngine < configuration.maxPipelinedRequests / 2, waiting.isEmpty, deferred.isEmpty {
            readPaused = false
            context.read()
        }
    }

    // MARK: Outbound

    /// A line the server sends unasked (a `cluster` event), not to peers. Own event loop.
    func sendServerLine(_ line: [UInt8]) {
        guard let context, !closing, !isPeer else { return }
        send(line, context: context)
        flushOutbox(context: context)
    }

    /// Output from the engine, on this connection's event loop.
    func receive(_ outputs: [Outbound]) {
        guard let context, !closing else { return }
        for output in outputs {
            if !deferred.isEmpty || outbox.readableBytes > Self.pauseBytes || !waiting.isEmpty {
                // The peer has not taken what was sent: this waits, behind what already does.
                if case .event(_, let body) = output { deferredBytes += body.readableBytes }
                deferred.append(output)
                continue
            }
            if deliver(output, context: context) { return }
        }
        afterDelivery(context: context)
    }

    /// Writes what the engine's output added, and resumes what waited for it.
    private func afterDelivery(context: ChannelHandlerContext) {
        checkOutboxBound(context: context)
        flushOutbox(context: context)
        resumeReadingIfNeeded(context: context)
        if closeWhenIdle, slots.isEmpty { closeOnceDrained(context: context) }
    }

    /// Once this much waits to be sent, the engine's further output waits in `deferred`.
    static let pauseBytes = 1 << 20

    /// Queues one output of the engine; true when it closed the connection.
    private func deliver(_ output: Outbound, context: ChannelHandlerContext) -> Bool {
        let before = outbox.readableBytes
        switch output {
        case .event(let sub, let body):
            queueEvent(sub: sub, body: body)
        case .cancelled(let sub, let error):
            queue(ResponseEncoder.cancelEvent(sub: sub, error))
        case .authRevoked(let reason):
            queue(ResponseEncoder.authRevoked(reason: reason))
        case .response(let id, let body):
            scratch.removeAll(keepingCapacity: true)
            ResponseEncoder.encode(id: id, body, into: &scratch)
            fillFrontSlot(scratch, context: context)
            // A large answer's room is not kept for the connection's life.
            if scratch.capacity > Self.pauseBytes { scratch = [] }
        case .line(let line):
            queue(line)
        case .computed(let lines):
            // A snapshot's lines, each large: the bound is checked after each one.
            for line in lines() {
                send(line, context: context)
                if closing { break }
            }
        case .close:
            flushOutbox(context: context)
            closeOnceDrained(context: context)
            return true
        }
        let added = outbox.readableBytes - before
        if added > Self.pauseBytes, before + waitingBytes <= Self.pauseBytes {
            answerAllowance = max(answerAllowance, added)
        }
        return false
    }

    /// Hands `deferred` output on while the peer keeps up, and the server's buffers have room
    /// for answers (else tries again shortly).
    private func drainDeferred(context: ChannelHandlerContext) {
        while !closing, waiting.isEmpty, outbox.readableBytes <= Self.pauseBytes, let next = deferred.first {
            if case .response = next, security.buffers.isSpent {
                scheduleBudgetRetry(context: context)
                break
            }
            deferred.removeFirst()
            if case .event(_, let body) = next { deferredBytes -= body.readableBytes }
            if deliver(next, context: context) { return }
        }
        afterDelivery(context: context)
    }

    private func scheduleBudgetRetry(context: ChannelHandlerContext) {
        guard budgetRetry == nil else { return }
        budgetRetry = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(50)) { [self] in
            budgetRetry = nil
            guard let context = self.context else { return }
            drainDeferred(context: context)
        }
    }

    private func enqueueReady(_ bytes: [UInt8], context: ChannelHandlerContext) {
        if slots.isEmpty {
            send(bytes, context: context)
        } else {
            slots.append(.ready(bytes))
        }
    }

    private func fillFrontSlot(_ bytes: [UInt8], context: ChannelHandlerContext) {
        // The engine answers in request order, and ready slots are flushed eagerly, so the
        // front slot is the one waiting for this response.
        guard case .awaitingEngine? = slots.first else {
            logger.error("response without a waiting request; closing the connection")
            context.close(promise: nil)
            return
        }
        slots.removeFirst()
        waitingForEngine -= 1
        queue(bytes)  // the delivery (`receive`) checks the outbox's bound once it is done
        while case .ready(let next)? = slots.first {
            slots.removeFirst()
            queue(next)
        }
    }

    /// Queues bytes in the outbox, and checks its bound (`checkOutboxBound`).
    private func send(_ bytes: [UInt8], context: ChannelHandlerContext) {
        queue(bytes)
        checkOutboxBound(context: context)
    }

    /// Queues bytes in the outbox; `flushOutbox` writes them. The caller checks the outbox's
    /// bound once it has queued what it had (an engine delivery checks once, not per answer:
    /// the check costs about as much as the copy).
    private func queue(_ bytes: [UInt8]) {
        guard !closing else { return }
        outbox.writeBytes(bytes)
    }

    /// An event: the subscriber's prefix `{"sub":S,` and the body all its subscribers share,
    /// written straight into the outbox (its bound checked by the caller, as for `queue`).
    private func queueEvent(sub: Int, body: ByteBuffer) {
        guard !closing else { return }
        Self.writeEvent(sub: sub, body: body, into: &outbox)  // one access to the outbox
    }

    private static func writeEvent(sub: Int, body: ByteBuffer, into outbox: inout ByteBuffer) {
        // The prefix is put together on the stack and written with one copy, then the body.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { prefix in
            var count = 0
            for byte in #"{"sub":"#.utf8 {
                prefix[count] = byte
                count += 1
            }
            count += writeDecimal(sub, into: UnsafeMutableBufferPointer(rebasing: prefix[count...]))
            prefix[count] = UInt8(ascii: ",")
            outbox.writeBytes(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: prefix[...count])))
        }
        outbox.writeImmutableBuffer(body)
    }

    /// A reader too slow to keep its unsent output under `maxOutboundBytes` is told
    /// `slow_consumer` and disconnected. The output still waiting here is dropped, so the event
    /// follows only the lines already handed to the channel (whole lines); the output side is
    /// shut once it is written, and the connection closed when the client closes its side or
    /// after `slowConsumerGrace`, whichever comes first.
    private func checkOutboxBound(context: ChannelHandlerContext) {
        guard !closing else { return }
        // A peer replica receiving a snapshot may hold more; its stream is cut by the engine
        // rather than here.
        let limit = configuration.maxOutboundBytes * (isPeer ? 16 : 1) + answerAllowance
        let queued = waitingBytes + outbox.readableBytes + deferredBytes
        let pending = queued + channelBufferedBytes(context, mattersAbove: limit - queued)
        if pending > BufferBudget.smallHolding || outputCharge.bytes > 0 {
            outputCharge.update(pending, in: security.buffers)
        }
        // While the server's buffers are spent, a connection that holds much and whose peer is
        // not taking it is let go.
        let overBudget =
            pending > BufferBudget.smallHolding && !isPeer && security.buffers.isSpent
            && (!waiting.isEmpty || !context.channel.isWritable)
        guard pending > limit || overBudget else { return }
        closing = true
        outbox.clear()
        waiting.removeAll()
        waitingBytes = 0
        deferred.removeAll()
        deferredBytes = 0
        outputCharge.update(0, in: security.buffers)
        logger.warning(
            "closing a slow consumer",
            metadata: [
                "pendingBytes": "\(pending)", "reason": "\(overBudget ? "maxBufferedBytes" : "maxOutboundBytes")",
            ])
        let error =
            overBudget
            ? DatabaseError(
                .slowConsumer,
                "the connection did not read its output while the server's buffers were full (maxBufferedBytes)")
            : DatabaseError(
                .slowConsumer, "the connection's unsent output exceeded \(configuration.maxOutboundBytes) bytes")
        let line = ResponseEncoder.errorEvent(error)
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { result in
            if case .success = result {
                context.close(mode: .output, promise: nil)
            } else {
                context.close(promise: nil)
            }
        }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: line)), promise: written)
        slowConsumerClose = context.eventLoop.assumeIsolated().scheduleTask(in: Self.slowConsumerGrace) {
            context.close(promise: nil)
        }
        context.read()
    }

    /// How long a slow consumer has to read what was sent, the `slow_consumer` event last.
    static let slowConsumerGrace: TimeAmount = .seconds(10)

    /// Writes what the outbox holds with one write, and flushes; when the channel is not
    /// writable, the outbox waits for it in `waiting`.
    private func flushOutbox(context: ChannelHandlerContext) {
        guard !closing, outbox.readableBytes > 0 else { return }
        let count = outbox.readableBytes
        var buffer = outbox
        outbox = spareOutbox.take() ?? context.channel.allocator.buffer(capacity: Swift.min(count, 64 * 1024))
        if waiting.isEmpty, context.channel.isWritable {
            progress.add(count)
            // One trip down the pipeline for both (`write` then `flush` made two).
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            // Written whole, the bytes are no longer the channel's: clearing allocates nothing. A
            // large buffer is let go, so that an idle connection keeps little.
            if buffer.capacity <= Self.spareOutboxCapacity {
                buffer.clear()
                spareOutbox = buffer
            }
        } else {
            waiting.append(buffer)
            waitingBytes += count
        }
    }

    /// The largest outbox buffer kept as the spare.
    static let spareOutboxCapacity = 4096

    private func write(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        progress.add(buffer.readableBytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    /// The bytes the channel holds that have not reached the socket, when they may exceed
    /// `threshold`. A writable channel holds less than its high water mark (64 KiB), so the exact
    /// count, a slower query, is read only when the channel is not writable or the threshold is
    /// below that mark; otherwise 0 stands for "not above the threshold".
    private func channelBufferedBytes(_ context: ChannelHandlerContext, mattersAbove threshold: Int) -> Int {
        let highWaterMark = 64 * 1024
        if context.channel.isWritable, threshold >= highWaterMark { return 0 }
        return (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
    }

    /// Closes once every byte written so far has reached the socket: the promise of an empty
    /// write completes after the writes before it.
    private func closeAfterWritten(context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: written)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !closing {
            if !waiting.isEmpty {
                while context.channel.isWritable, let next = waiting.popFirst() {
                    waitingBytes -= next.readableBytes
                    write(next, context: context)
                }
                context.flush()
                if closeWhenDrained, waiting.isEmpty {
                    closeWhenDrained = false
                    closeAfterWritten(context: context)
                }
            }
            if waiting.isEmpty {
                stallTimer?.cancel()
                stallTimer = nil
                if deferred.isEmpty { answerAllowance = 0 }
                drainDeferred(context: context)
            }
        } else if !closing, slowConsumerClose == nil {
            let buffered = channelBufferedBytes(context, mattersAbove: 0)
            progress.restart(stillBuffered: buffered)
            armStallTimer(context: context)
            checkOutboxBound(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Checks every `writeStallTimeoutSeconds` while the channel is unwritable: a peer that took
    /// nothing in that time is disconnected.
    private func armStallTimer(context: ChannelHandlerContext) {
        guard stallTimer == nil else { return }
        let timeout = security.limits.writeStallTimeoutSeconds
        stallTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(Int64(timeout))) { [self] in
            stallTimer = nil
            guard let context = self.context, !closing, !context.channel.isWritable || !waiting.isEmpty else { return }
            checkOutboxBound(context: context)
            guard !closing else { return }
            if progress.moved(stillBuffered: channelBufferedBytes(context, mattersAbove: 0)) {
                armStallTimer(context: context)
                return
            }
            limitHit(
                "closing a connection whose peer stopped reading",
                metadata: ["pendingBytes": "\(waitingBytes + deferredBytes)", "timeoutSeconds": "\(timeout)"])
            closing = true
            outputCharge.update(0, in: security.buffers)
            context.close(promise: nil)
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

    private func closeAfterPendingResponses(context: ChannelHandlerContext) {
        closeWhenIdle = true
        if slots.isEmpty { closeOnceDrained(context: context) }
    }

    /// Closes after the bytes already written have left, so that the last answers arrive.
    private func closeOnceDrained(context: ChannelHandlerContext) {
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
