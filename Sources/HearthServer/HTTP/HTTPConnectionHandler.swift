import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import Logging
import NIOCore
import NIOHTTP1

/// What the HTTP listener serves besides the database: `/.well-known/hearth/…` (health,
/// metrics, stats), completing on the given loop; nil when the path is not one of them.
typealias WellKnownResponder =
    @Sendable (_ path: String, _ loop: any EventLoop) -> EventLoopFuture<
        WellKnownResponse
    >?

/// One HTTP connection: turns each request into the engine `Request`s the line protocol would
/// send (through the same engine turn, so one revision order, one set of events and one rules
/// check for both protocols) and writes the answer, or keeps a Server-Sent Events stream open.
///
/// It serves one request at a time: the parts of pipelined requests that arrive meanwhile wait in
/// `queued` (reading stops when too many do), so answers leave in request order, and the next
/// request is served only once the peer has taken most of the last answer (`blockedOnOutput`),
/// so a client that asks without reading holds one answer at most. A connection is idle,
/// receiving, waiting for the engine, or streaming; a stream is the last thing it does.
///
/// Every wait is timed (docs/security.md "Timeouts"): the first request head, the idle time
/// between requests, a body's pace, and output the peer does not take. A body is checked before
/// it is read: its declared size, the room left in the server's `BufferBudget`, and with rules
/// the credential (a caller who has not signed in may send only a small body).
/// Responses are written as bytes (status line, headers, body in one buffer; a stream's events
/// as chunks), which costs far less than NIOHTTP1's encoder for small answers.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, TransportConnection,
    StallWatching
{
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    enum State {
        case idle
        case receiving(HTTPRequestHead, RequestHeaders, body: ByteBuffer)
        /// The request was answered early (413); its remaining parts are dropped.
        case discarding
        case waiting(Exchange)
        case streaming(Stream)
        /// A long-polling request waits for its session's answer (`serveLongPoll`).
        case polling(HTTPRequestHead)
        case closed
    }

    /// A request handed to the engine: its answers come back in order, first one per identity
    /// change sent ahead of it.
    struct Exchange {
        let head: HTTPRequestHead
        let call: RESTCall
        var identityAnswers: Int
    }

    struct Stream {
        let head: HTTPRequestHead
        var sub: Int
    }

    // The state every request touches is `@exclusivity(unchecked)`: only the channel's event loop
    // touches it, and no access calls code that could reach it again (as in `ConnectionHandler`).
    let id: UInt64
    /// The engine of the database the connection's session is on (`onDatabase`).
    @exclusivity(unchecked) var engine: Engine
    let databases: DatabaseRegistry
    /// The connection's hold on that database; nil before its first request.
    var lease: DatabaseRegistry.Lease?
    /// The database's name as the requests gave it; nil: the default database.
    var boundDatabase: String?
    /// The metrics the connection was counted in when it opened.
    let connectionMetrics: ServerMetrics
    let configuration: ServerConfiguration
    let security: SecurityState
    let parser: RESTRequestParser
    let wellKnown: WellKnownResponder
    let origins: OriginPolicy
    /// The listener's long-polling sessions.
    let longPolls: LongPollRegistry
    let registry: ConnectionRegistry
    let logger: Logger
    let clock: @Sendable () -> Int64

    @exclusivity(unchecked) var state = State.idle
    var context: ChannelHandlerContext?
    var sessionLink: SessionLink?
    /// Where the connection comes from, and whether it is counted under the connection limits.
    var admission = ConnectionAdmission()
    var remoteAddress: String { admission.remoteAddress }
    /// Why this connection may not be served (connection limits): its first request gets it.
    var refusal: String?
    @exclusivity(unchecked) var writeLimiter: WriteLimits?
    /// The credential (and override) whose identity the engine's session holds; "" for none.
    @exclusivity(unchecked) var engineIdentity = ""
    @exclusivity(unchecked) var requestsServed = 0
    @exclusivity(unchecked) var closeAfterAnswer = false
    var idleTimer: Scheduled<Void>?
    @exclusivity(unchecked) var idleTimeout: TimeAmount
    @exclusivity(unchecked) var lastActivity = NIODeadline.now()
    /// `Access-Control-Allow-Origin` for the request being answered (`OriginPolicy`).
    @exclusivity(unchecked) var allowOrigin = "*"
    /// This connection's share of the server's `BufferBudget`.
    @exclusivity(unchecked) var charge = BufferCharge()
    /// Whether the peer takes the output, checked while the channel is unwritable.
    @exclusivity(unchecked) var stallWatch = StallWatch()
    var stallTimer: Scheduled<Void>?
    /// Whether the next request waits until the channel is writable again: the peer has not yet
    /// taken the last answer.
    @exclusivity(unchecked) var blockedOnOutput = false
    /// The answer to a broken request that arrived behind requests still being served: written
    /// once they are answered, then the connection closes.
    @exclusivity(unchecked) var deferredFailure: RESTResponse?
    /// A request that closes the connection arrived: the bytes after it are not requests.
    @exclusivity(unchecked) var closingRequestSeen = false
    @exclusivity(unchecked) var ignoringInput = false
    /// The body being received: bytes in the current pace window, and its timer.
    @exclusivity(unchecked) var bodyWindowBytes = 0
    @exclusivity(unchecked) var bodyTimer: Scheduled<Void>?
    /// With rules, the most a body may grow to without a credential (nil: no such bound).
    @exclusivity(unchecked) var unauthenticatedBodyLimit: Int?
    /// The credential verified at the head of the request being received, so that it is not
    /// verified twice.
    @exclusivity(unchecked) var preverified: (credential: String, identity: AuthContext)?
    var keepAliveTimer: Scheduled<Void>?
    @exclusivity(unchecked) var lastStreamWrite = NIODeadline.now()
    @exclusivity(unchecked) var outstandingBytes = 0
    /// A stream's bound: `maxOutboundBytes` (with the allowance of one large event while it is
    /// being sent) and the server's `BufferBudget`.
    @exclusivity(unchecked) var outputBound = OutputBound()
    /// Parts of requests that arrived while an earlier one was being served.
    @exclusivity(unchecked) var queued = CircularBuffer<HTTPServerRequestPart>()
    @exclusivity(unchecked) var readPaused = false
    /// Request parts queued before the connection stops reading (about 60 pipelined requests).
    static let maxQueuedParts = 192
    /// Whether this connection opened a stream (counted in the metrics until it closes).
    var streamCounted = false
    /// Whether the stream's events are sent as chunks (HTTP/1.1).
    var chunked = true

    /// How long a refused request's remaining bytes are read and dropped before the connection
    /// closes, so that the close does not reset the connection before the peer reads the answer.
    static let lingerTime = TimeAmount.seconds(2)

    init(
        id: UInt64, databases: DatabaseRegistry, configuration: ServerConfiguration, security: SecurityState,
        wellKnown: @escaping WellKnownResponder, origins: OriginPolicy, longPolls: LongPollRegistry,
        registry: ConnectionRegistry, logger: Logger, clock: @escaping @Sendable () -> Int64
    ) {
        self.origins = origins
        self.longPolls = longPolls
        self.idleTimeout = .seconds(Int64(security.limits.firstRequestTimeoutSeconds))
        self.id = id
        self.databases = databases
        self.engine = databases.defaultDatabase.engine
        self.connectionMetrics = engine.metrics
        self.configuration = configuration
        self.security = security
        self.parser = RESTRequestParser(
            decoder: RequestDecoder(limits: configuration.limits), databaseDomains: configuration.databases.domains)
        self.wellKnown = wellKnown
        self.registry = registry
        var logger = logger
        logger[metadataKey: "http-connection"] = "\(id)"
        self.logger = logger
        self.clock = clock
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) { attach(to: context) }

    func handlerRemoved(context: ChannelHandlerContext) { detach() }

    func channelActive(context: ChannelHandlerContext) {
        let admitted = admission.admit(context.remoteAddress, security: security)
        if let refused = admitted.refusal {
            security.counters.limitHits.add(1)
            refusal = refused
        }
        writeLimiter = admitted.writeLimits
        connectionMetrics.connectionOpened(kind: .http)
        register(in: registry, channel: context.channel)
        armIdleTimer(context: context, timeout: .seconds(Int64(security.limits.firstRequestTimeoutSeconds)))
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        keepAliveTimer?.cancel()
        stallTimer?.cancel()
        bodyTimer?.cancel()
        charge.release(from: security.buffers)
        _ = admission.release(from: security)
        if streamCounted { engine.metrics.streamClosed() }
        state = .closed
        connectionMetrics.connectionClosed(kind: .http)
        engine.submit(.disconnected(sessionID: id))
        lease?.release()
        lease = nil
        registry.remove(id: id)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case let error as HTTPParserError:
            // What follows a request that closes the connection is not a request.
            guard !ignoringInput else { return }
            let answer =
                error == .headerOverflow
                ? RESTResponse.error(RESTError(.requestHeaderFieldsTooLarge, "the request head exceeds 64 KiB"))
                : RESTResponse.error(.badRequest("malformed HTTP request"))
            ignoringInput = true
            // The requests before the broken one get their own answers first.
            if case .waiting = state {
                deferredFailure = answer
            } else if case .polling = state {
                deferredFailure = answer
            } else if !queued.isEmpty {
                deferredFailure = answer
            } else {
                answerAndClose(answer)
            }
        default:
            security.logConnectionError(error, peer: remoteAddress, message: "HTTP connection error", logger: logger)
            context.close(promise: nil)
        }
    }

    /// Answers outside any request's exchange (a broken request) and closes.
    func answerAndClose(_ response: RESTResponse) {
        guard let context else { return }
        if case .streaming = state {
            context.close(promise: nil)
            return
        }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        refuseBeforeBody(response, head: head, context: context)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !ignoringInput else { return }
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let head) where !head.isKeepAlive: closingRequestSeen = true
        case .end where closingRequestSeen: ignoringInput = true
        default: break
        }
        switch state {
        case .idle where queued.isEmpty && !blockedOnOutput, .receiving, .discarding:
            process(part, context: context)
        case .idle, .waiting, .polling:
            queued.append(part)
        case .streaming, .closed:
            break  // a stream is the last request a connection serves
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        timeUnfinishedBody(context: context)
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if queued.count >= Self.maxQueuedParts || (blockedOnOutput && !queued.isEmpty) {
            readPaused = true
        } else {
            context.read()
        }
    }

    /// Serves the queued parts of pipelined requests while the connection is free for them.
    func processQueued(context: ChannelHandlerContext) {
        while let part = queued.first {
            if blockedOnOutput, case .idle = state { return }
            switch state {
            case .idle, .receiving, .discarding:
                queued.removeFirst()
                process(part, context: context)
            case .waiting, .polling, .streaming, .closed:
                return
            }
        }
        if let failure = deferredFailure {
            switch state {
            case .idle, .receiving, .discarding:
                deferredFailure = nil
                state = .idle
                answerAndClose(failure)
            case .waiting, .polling, .streaming, .closed:
                break
            }
            return
        }
        timeUnfinishedBody(context: context)
        if readPaused, queued.count < Self.maxQueuedParts / 2, !blockedOnOutput {
            readPaused = false
            context.read()
        }
    }

    func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            guard case .idle = state else { return }
            let headers = RequestHeaders(head.headers)
            if let refusal = admitHead(head, headers: headers, context: context) {
                state = .discarding
                refuseBeforeBody(refusal, head: head, context: context)
                return
            }
            state = .receiving(head, headers, body: context.channel.allocator.buffer(capacity: 0))
        case .body(var chunk):
            guard case .receiving(let head, let headers, var body) = state else { return }
            state = .discarding  // drops the buffer's reference while appending
            let size = body.readableBytes + chunk.readableBytes
            bodyWindowBytes += chunk.readableBytes
            if size > configuration.maxMessageBytes {
                refuseBeforeBody(RESTResponse.error(bodyTooLarge), head: head, context: context)
                return
            }
            if let limit = unauthenticatedBodyLimit, size > limit {
                refuseBeforeBody(unauthenticatedBodyRefusal(limit), head: head, context: context)
                return
            }
            if size > BufferBudget.smallHolding, size > charge.bytes {
                // A body of unknown length (chunked) is counted as it grows.
                guard security.buffers.hasRoom(for: size - charge.bytes) else {
                    refuseBeforeBody(buffersFull, head: head, context: context)
                    return
                }
                charge.update(size, in: security.buffers)
            }
            body.writeBuffer(&chunk)
            state = .receiving(head, headers, body: body)
        case .end:
            guard case .receiving(let head, let headers, let body) = state else { return }
            bodyTimer?.cancel()
            bodyTimer = nil
            unauthenticatedBodyLimit = nil
            let bytes = Array(body.readableBytesView)
            state = .discarding  // the body's buffer is let go; `handle` sets what comes next
            charge.update(0, in: security.buffers)
            handle(head: head, headers: headers, body: bytes, context: context)
        }
    }

    func handle(
        head: HTTPRequestHead, headers: RequestHeaders, body: [UInt8], context: ChannelHandlerContext
    ) {
        requestsServed += 1
        if Self.isFirebaseSocketPath(head.uri) {
            upgradeToFirebase(head: head, headers: headers, context: context)
            return
        }
        if Self.isFirebaseLongPollPath(head.uri) {
            serveLongPoll(head: head, headers: headers, context: context)
            return
        }
        let call: RESTCall
        do { call = try parser.parse(head: head, headers: headers, body: body) } catch {
            countRejection(error)
            finish(RESTResponse.error(error), head: head, call: nil, context: context)
            return
        }
        switch call.action {
        case .preflight(let requested):
            var response = RESTResponse(status: .ok)
            response.contentType = nil
            response.headers = [
                ("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, DELETE, OPTIONS"),
                (
                    "Access-Control-Allow-Headers",
                    requested
                        ?? "Authorization, Content-Type, X-Firebase-ETag, If-Match, If-None-Match, X-HTTP-Method-Override, Cache-Control, Last-Event-ID"
                ),
                ("Access-Control-Max-Age", "86400"),
            ]
            finish(response, head: head, call: nil, context: context)
        case .wellKnown(let path):
            // Stats name the paths of slow and unindexed queries: with rules, for admins only;
            // metrics too under `metricsRequireAdmin`. Health stays open to probes.
            let adminOnly =
                path == WellKnownEndpoints.statsPath
                || (path == WellKnownEndpoints.metricsPath && configuration.metricsRequireAdmin)
            if adminOnly, let refused = adminRefusal(call) {
                countRejection(refused)
                finish(RESTResponse.error(refused), head: head, call: call, context: context)
                return
            }
            guard let future = wellKnown(path, context.eventLoop) else {
                finish(RESTResponse.error(RESTRequestParser.notFound), head: head, call: nil, context: context)
                return
            }
            state = .waiting(Exchange(head: head, call: call, identityAnswers: 0))
            future.assumeIsolated().whenComplete { [self] result in
                guard case .waiting = state, let context = self.context else { return }
                switch result {
                case .success(let answer):
                    // Every answer says `Cache-Control: no-cache` (`writeStatusLine`), these too.
                    var response = RESTResponse(
                        status: HTTPResponseStatus(statusCode: answer.status), body: answer.body)
                    response.contentType = answer.contentType
                    finish(response, head: head, call: call, context: context)
                case .failure(let error):
                    finish(
                        RESTResponse.error(RESTError(.internalServerError, "\(error)")), head: head, call: call,
                        context: context)
                }
            }
        case .databases(let request):
            serveDatabases(request, call: call, head: head, context: context)
        case .getRules:
            submit(.getRules, call: call, head: head, context: context)
        case .setRules(let operation), .simulate(let operation), .read(let operation, _, _, _),
            .stream(let operation, _, _):
            submit(operation, call: call, head: head, context: context)
        case .console(let file):
            guard let asset = ConsoleAssets.asset(named: file) else {
                let missing = RESTError(.notFound, "no such console file")
                finish(RESTResponse.error(missing), head: head, call: nil, context: context)
                return
            }
            var response = RESTResponse(status: .ok, body: asset.bytes)
            response.contentType = asset.contentType
            finish(response, head: head, call: call, context: context)
        case .write(let operation, _, _):
            if let refusal = writeLimiter?.take() {
                let refused = RESTRender.failure(security.writeRateExceeded(refusal), call: call)
                countRejection(refused)
                finish(RESTResponse.error(refused), head: head, call: call, context: context)
                return
            }
            submit(operation, call: call, head: head, context: context)
        }
    }

    /// Hands the call's operation to the engine, preceded by an identity change when the
    /// request's credential differs from the one the engine's session holds.
    func submit(
        _ operation: HearthProtocol.Operation, call: RESTCall, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        if isOnDatabase(of: call) {
            submitOnDatabase(operation, call: call, head: head, context: context)
            return
        }
        onDatabase(of: call, head: head, context: context) { [self] in
            submitOnDatabase(operation, call: call, head: head, context: context)
        }
    }

    /// `submit`, once the session is on the call's database.
    func submitOnDatabase(
        _ operation: HearthProtocol.Operation, call: RESTCall, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        guard let sessionLink else { return }
        var requests: [Request] = []
        switch identityStep(for: call) {
        case .failure(let error):
            countRejection(error)
            finish(RESTResponse.error(error), head: head, call: call, context: context)
            return
        case .success(let step?):
            requests.append(Request(id: .null, operation: .auth(step)))
        case .success(nil):
            break
        }
        state = .waiting(Exchange(head: head, call: call, identityAnswers: requests.count))
        var request = Request(id: .null, operation: operation)
        request.source = call.source?.serialized
        if case .write(_, let method, _) = call.action {
            // The value as stored shows in the body, the ETag or a PATCH's answer; a silent
            // write without an ETag needs only the revision.
            request.answerWithStoredValue =
                call.print != .silent || call.wantsETag || call.ifMatch != nil || method == .POST
        }
        if requests.isEmpty {
            engine.submit(.request(sessionLink, request))
        } else {
            requests.append(request)
            engine.submit(.requests(sessionLink, requests))
        }
    }

    /// Why `call` may not see admin-only server information (nil: it may): with rules, only a
    /// credential that verifies as admin may.
    func adminRefusal(_ call: RESTCall) -> RESTError? {
        guard !security.isOpen else { return nil }
        guard let credential = call.credential else { return RESTError(.unauthorized, "Permission denied") }
        switch security.authenticate(credential, from: remoteAddress, now: clock(), logger: logger) {
        case .success(let identity) where identity.isAdmin: return nil
        case .success: return RESTError(.unauthorized, "Permission denied")
        case .failure(let error): return RESTRender.failure(error, call: call)
        }
    }

    /// Counts a request answered before it reached the engine.
    func countRejection(_ error: RESTError) {
        let code: DatabaseError.Code
        switch error.status {
        case .unauthorized: code = .invalidToken
        case .tooManyRequests: code = .overloaded
        case .payloadTooLarge: code = .tooLarge
        case .notFound: code = .notFound
        default: code = .badRequest
        }
        engine.metrics.requestRejected(errorCode: code)
    }

    /// The identity step the request needs (nil: the session already has its identity). In
    /// open mode credentials are accepted and ignored (docs/security.md, "HTTP requests").
    func identityStep(for call: RESTCall) -> Result<AuthStep?, RESTError> {
        guard !security.isOpen else { return .success(nil) }
        guard let credential = call.credential else {
            guard !engineIdentity.isEmpty else { return .success(nil) }
            engineIdentity = ""
            return .success(.signOut)
        }
        var identity: AuthContext?
        if let (checked, verified) = preverified.take(), checked == credential {
            identity = verified
        } else {
            switch security.authenticate(
                credential, from: remoteAddress, now: clock(), logger: logger,
                databaseSecrets: configuration.databases.settings(for: call.database ?? databases.defaultName.text)
                    .adminSecrets)
            {
            case .failure(let error): return .failure(RESTRender.failure(error, call: call))
            case .success(let verified): identity = verified
            }
        }
        var key = credential
        if let override = call.authOverride, identity?.isAdmin == true {
            do { identity = try RequestDecoder.simulatedIdentity(override) } catch {
                return .failure(.badRequest("auth_variable_override: \(error.message)"))
            }
            key += "\u{0}" + override.jsonString
        }
        guard key != engineIdentity else { return .success(nil) }
        engineIdentity = key
        guard let identity else { return .success(.signOut) }
        return .success(.verified(identity))
    }

    // MARK: Engine output

    /// Output from the engine, on this connection's event loop.
    func receive(_ outputs: [Outbound]) {
        guard let context else { return }
        // A stream's events of one delivery go out as one chunk, as the line protocol writes a
        // turn's output with one write.
        var events: ByteBuffer?
        func sendEvents() {
            guard var gathered = events else { return }
            events = nil
            if case .streaming = state { writeStreamBytes(&gathered, context: context) }
        }
        for output in outputs {
            switch output {
            case .response(_, let body):
                answer(body, context: context)
            case .event(let sub, var body):
                guard case .streaming(let stream) = state, stream.sub == sub else { continue }
                if events == nil {
                    events = body
                } else {
                    events?.writeBuffer(&body)
                }
            case .cancelled(let sub, _):
                guard case .streaming(let stream) = state, stream.sub == sub else { continue }
                sendEvents()
                endStream(with: StreamEvents.cancel, context: context)
            case .line, .computed, .close:
                // Peer and cluster lines belong to the line protocol.
                continue
            case .authRevoked:
                engineIdentity = "\u{0}revoked"
                sendEvents()
                if case .streaming = state { endStream(with: StreamEvents.authRevoked, context: context) }
            }
        }
        sendEvents()
        context.flush()
    }

    func answer(_ body: ResponseBody, context: ChannelHandlerContext) {
        guard case .waiting(var exchange) = state else { return }
        if exchange.identityAnswers > 0 {
            exchange.identityAnswers -= 1
            state = .waiting(exchange)
            return
        }
        if case .stream = exchange.call.action, case .subscribed(let sub, let rev, let warning, _, _) = body {
            startStream(sub: sub, rev: rev, warning: warning, head: exchange.head, context: context)
            return
        }
        switch RESTRender.answer(body, to: exchange.call) {
        case .success(let response): finish(response, head: exchange.head, call: exchange.call, context: context)
        case .failure(let error):
            finish(RESTResponse.error(error), head: exchange.head, call: exchange.call, context: context)
        }
    }

    // MARK: Shutdown

    /// Graceful shutdown: an idle connection closes, a request being served gets its answer
    /// first, a stream ends with its last chunk.
    func beginShutdown() {
        guard let context else { return }
        closeAfterAnswer = true
        switch state {
        case .idle:
            state = .closed
            context.close(promise: nil)
        case .streaming:
            endStream(with: nil, context: context)
        case .receiving, .discarding:
            // Not yet received whole: nothing to answer, and waiting could hold the shutdown.
            state = .closed
            context.close(promise: nil)
        case .polling:
            // The poll is answered empty now; the session's own answer finds the connection gone.
            finishLongPoll(.empty)
        case .waiting, .closed:
            break
        }
    }
}
