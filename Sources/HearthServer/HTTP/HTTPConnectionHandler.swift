import HearthCore
import HearthJSON
import HearthProtocol
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

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
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case receiving(HTTPRequestHead, RequestHeaders, body: ByteBuffer)
        /// The request was answered early (413); its remaining parts are dropped.
        case discarding
        case waiting(Exchange)
        case streaming(Stream)
        case closed
    }

    /// A request handed to the engine: its answers come back in order, first one per identity
    /// change sent ahead of it.
    private struct Exchange {
        let head: HTTPRequestHead
        let call: RESTCall
        var identityAnswers: Int
    }

    private struct Stream {
        let head: HTTPRequestHead
        var sub: Int
    }

    private let id: UInt64
    private let engine: Engine
    private let configuration: ServerConfiguration
    private let security: SecurityState
    private let parser: RESTRequestParser
    private let wellKnown: WellKnownResponder
    private let origins: OriginPolicy
    private let registry: ConnectionRegistry
    private let logger: Logger
    private let clock: @Sendable () -> Int64

    private var state = State.idle
    private var context: ChannelHandlerContext?
    private var sessionLink: SessionLink?
    private var remoteAddress = "?"
    private var admitted = false
    /// Why this connection may not be served (connection limits): its first request gets it.
    private var refusal: String?
    private var writeLimiter: WriteLimits?
    /// The credential (and override) whose identity the engine's session holds; "" for none.
    private var engineIdentity = ""
    private var requestsServed = 0
    private var closeAfterAnswer = false
    private var idleTimer: Scheduled<Void>?
    private var idleTimeout: TimeAmount
    private var lastActivity = NIODeadline.now()
    /// `Access-Control-Allow-Origin` for the request being answered (`OriginPolicy`).
    private var allowOrigin = "*"
    /// This connection's share of the server's `BufferBudget`.
    private var charge = BufferCharge()
    /// Whether the peer takes the output, checked while the channel is unwritable.
    private var progress = OutputProgress()
    private var stallTimer: Scheduled<Void>?
    /// Whether the next request waits until the channel is writable again: the peer has not yet
    /// taken the last answer.
    private var blockedOnOutput = false
    /// The answer to a broken request that arrived behind requests still being served: written
    /// once they are answered, then the connection closes.
    private var deferredFailure: RESTResponse?
    /// A request that closes the connection arrived: the bytes after it are not requests.
    private var closingRequestSeen = false
    private var ignoringInput = false
    /// The body being received: bytes in the current pace window, and its timer.
    private var bodyWindowBytes = 0
    private var bodyTimer: Scheduled<Void>?
    /// With rules, the most a body may grow to without a credential (nil: no such bound).
    private var unauthenticatedBodyLimit: Int?
    /// The credential verified at the head of the request being received, so that it is not
    /// verified twice.
    private var preverified: (credential: String, identity: AuthContext)?
    private var keepAliveTimer: Scheduled<Void>?
    private var lastStreamWrite = NIODeadline.now()
    private var outstandingBytes = 0
    /// Parts of requests that arrived while an earlier one was being served.
    private var queued = CircularBuffer<HTTPServerRequestPart>()
    private var readPaused = false
    /// Request parts queued before the connection stops reading (about 60 pipelined requests).
    static let maxQueuedParts = 192
    /// Whether this connection opened a stream (counted in the metrics until it closes).
    private var streamCounted = false
    /// Whether the stream's events are sent as chunks (HTTP/1.1).
    private var chunked = true

    /// The window over which a body's pace is judged (`minBodyBytesPerSecond`).
    static let bodyPaceWindow = TimeAmount.seconds(10)
    /// How long a refused request's remaining bytes are read and dropped before the connection
    /// closes, so that the close does not reset the connection before the peer reads the answer.
    static let lingerTime = TimeAmount.seconds(2)

    init(
        id: UInt64, engine: Engine, configuration: ServerConfiguration, security: SecurityState,
        wellKnown: @escaping WellKnownResponder, origins: OriginPolicy, registry: ConnectionRegistry,
        logger: Logger, clock: @escaping @Sendable () -> Int64
    ) {
        self.origins = origins
        self.idleTimeout = .seconds(Int64(security.limits.firstRequestTimeoutSeconds))
        self.id = id
        self.engine = engine
        self.configuration = configuration
        self.security = security
        self.parser = RESTRequestParser(decoder: RequestDecoder(limits: configuration.limits))
        self.wellKnown = wellKnown
        self.registry = registry
        var logger = logger
        logger[metadataKey: "http-connection"] = "\(id)"
        self.logger = logger
        self.clock = clock
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        sessionLink = SessionLink(id: id, loop: context.eventLoop) { outputs in bound.value.receive(outputs) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        sessionLink = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        remoteAddress = context.remoteAddress?.ipAddress ?? "?"
        let local = isLoopback(remoteAddress) || remoteAddress == "?"
        if let refused = security.connections.admit(remoteAddress, isLoopback: local, limits: security.limits) {
            security.counters.limitHits.add(1)
            refusal = refused
        } else {
            admitted = true
        }
        writeLimiter = WriteLimits(security: security, address: remoteAddress, isLoopback: local)
        engine.metrics.connectionOpened(kind: .http)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        registry.add(id: id, channel: context.channel) { bound.value.beginShutdown() }
        armIdleTimer(context: context, timeout: .seconds(Int64(security.limits.firstRequestTimeoutSeconds)))
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        keepAliveTimer?.cancel()
        stallTimer?.cancel()
        bodyTimer?.cancel()
        charge.release(from: security.buffers)
        if admitted {
            admitted = false
            security.connections.release(remoteAddress)
        }
        if streamCounted { engine.metrics.streamClosed() }
        state = .closed
        engine.metrics.connectionClosed(kind: .http)
        engine.submit(.disconnected(sessionID: id))
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
            } else if !queued.isEmpty {
                deferredFailure = answer
            } else {
                answerAndClose(answer)
            }
        case is NIOSSLError, is BoringSSLError:
            security.noticeLog.notice(
                logger, "TLS handshake failed (a plain-text client, or an untrusted certificate?)",
                metadata: ["peer": "\(remoteAddress)", "error": "\(error)"])
            context.close(promise: nil)
        default:
            logger.debug("HTTP connection error", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    /// Answers outside any request's exchange (a broken request) and closes.
    private func answerAndClose(_ response: RESTResponse) {
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
        case .idle, .waiting:
            queued.append(part)
        case .streaming, .closed:
            break  // a stream is the last request a connection serves
        }
    }

    func read(context: ChannelHandlerContext) {
        if queued.count >= Self.maxQueuedParts || (blockedOnOutput && !queued.isEmpty) {
            readPaused = true
        } else {
            context.read()
        }
    }

    /// Serves the queued parts of pipelined requests while the connection is free for them.
    private func processQueued(context: ChannelHandlerContext) {
        while let part = queued.first {
            if blockedOnOutput, case .idle = state { return }
            switch state {
            case .idle, .receiving, .discarding:
                queued.removeFirst()
                process(part, context: context)
            case .waiting, .streaming, .closed:
                return
            }
        }
        if let failure = deferredFailure {
            switch state {
            case .idle, .receiving, .discarding:
                deferredFailure = nil
                state = .idle
                answerAndClose(failure)
            case .waiting, .streaming, .closed:
                break
            }
            return
        }
        if readPaused, queued.count < Self.maxQueuedParts / 2, !blockedOnOutput {
            readPaused = false
            context.read()
        }
    }

    private func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
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
            state = .receiving(head, headers, body: ByteBuffer())  // the body's buffer is let go
            charge.update(0, in: security.buffers)
            handle(head: head, headers: headers, body: bytes, context: context)
        }
    }

    /// Why a request must be refused before its body is read (nil: read it), from its head
    /// alone: its size, where it comes from, its declared body, and with rules its credential.
    /// Counts the declared body in the server's `BufferBudget`, sends `100 Continue` when the
    /// client waits for it, and starts timing the body.
    private func admitHead(
        _ head: HTTPRequestHead, headers: RequestHeaders, context: ChannelHandlerContext
    ) -> RESTResponse? {
        preverified = nil
        if let refusal {
            // Over the connection limits: the first request learns why, before its body is read.
            return RESTResponse.error(RESTError(.tooManyRequests, refusal, headers: [("Retry-After", "1")]))
        }
        if head.uri.utf8.count + headers.size > 64 * 1024 {
            return RESTResponse.error(RESTError(.requestHeaderFieldsTooLarge, "the request head exceeds 64 KiB"))
        }
        switch origins.decide(origin: headers.origin, host: headers.host, open: security.isOpen) {
        case .allowed(let value):
            allowOrigin = value
        case .refused(let message):
            allowOrigin = ""
            security.counters.limitHits.add(1)
            security.noticeLog.notice(
                logger, "cross-origin request refused",
                metadata: ["peer": "\(remoteAddress)", "origin": "\(headers.origin ?? "-")"])
            return RESTResponse.error(RESTError(.forbidden, message))
        }
        var declared = 0
        if let text = headers.contentLength {
            // All digits, but beyond what an Int holds, is still a length: too large.
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                return RESTResponse.error(.badRequest("Content-Length must be a number of bytes"))
            }
            guard let length = Int(text), length <= configuration.maxMessageBytes else {
                return RESTResponse.error(bodyTooLarge)
            }
            declared = length
        }
        let chunked = headers.transferEncoding != nil
        if let expect = headers.expect, expect.lowercased() != "100-continue" {
            return RESTResponse.error(RESTError(.expectationFailed, "only Expect: 100-continue is understood"))
        }
        guard declared > 0 || chunked else { return nil }
        if !security.isOpen {
            let (_, query) = RESTRequestParser.split(uri: head.uri)
            let credential = RESTRequestParser.credential(QueryParameters(query), headers: headers)
            let limit = security.limits.maxUnauthenticatedBodyBytes
            if let credential {
                // Verified now, before a large body is read, rather than after.
                if declared > limit || chunked {
                    switch security.authenticate(credential, from: remoteAddress, now: clock(), logger: logger) {
                    case .success(let identity): preverified = (credential, identity)
                    case .failure(let error):
                        let refused = RESTRender.failure(error, call: RESTCall(action: .getRules))
                        countRejection(refused)
                        return RESTResponse.error(refused)
                    }
                }
            } else if declared > limit {
                return unauthenticatedBodyRefusal(limit)
            } else {
                unauthenticatedBodyLimit = limit
            }
        }
        if declared > BufferBudget.smallHolding {
            guard security.buffers.hasRoom(for: declared) else { return buffersFull }
            charge.update(declared, in: security.buffers)
        }
        if headers.expect != nil {
            var interim = context.channel.allocator.buffer(capacity: 32)
            interim.writeStaticString("HTTP/1.1 100 Continue\r\n\r\n")
            progress.add(interim.readableBytes)
            context.writeAndFlush(wrapOutboundOut(interim), promise: nil)
        }
        bodyWindowBytes = 0
        armBodyTimer(context: context)
        return nil
    }

    private func unauthenticatedBodyRefusal(_ limit: Int) -> RESTResponse {
        let refused = RESTError(
            .unauthorized,
            "Permission denied: without a credential a request body may not exceed \(limit) bytes (maxUnauthenticatedBodyBytes)"
        )
        countRejection(refused)
        return RESTResponse.error(refused)
    }

    private var buffersFull: RESTResponse {
        security.counters.limitHits.add(1)
        let refused = RESTError(
            .serviceUnavailable,
            "the server is holding as much for its clients as it may (maxBufferedBytes); try again shortly",
            headers: [("Retry-After", "1")])
        countRejection(refused)
        return RESTResponse.error(refused)
    }

    /// Answers a request whose body will not be read and closes the connection, reading and
    /// dropping what the peer still sends for a moment first: closing with unread bytes would
    /// reset the connection, and the peer could lose the answer.
    private func refuseBeforeBody(_ response: RESTResponse, head: HTTPRequestHead, context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        bodyTimer = nil
        unauthenticatedBodyLimit = nil
        preverified = nil
        charge.update(0, in: security.buffers)
        ignoringInput = true
        queued.removeAll()
        state = .closed
        write(
            response, for: head, isHead: head.method == .HEAD, keepAlive: false, closeWhenWritten: false,
            context: context)
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingerTime) { context.close(promise: nil) }
        if readPaused {
            readPaused = false
            context.read()
        }
    }

    /// Closes a connection whose request body arrives slower than `minBodyBytesPerSecond`,
    /// judged over `bodyPaceWindow` (or the first-request timeout when shorter).
    private func armBodyTimer(context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        let limits = security.limits
        let window = min(Self.bodyPaceWindow, .seconds(Int64(limits.firstRequestTimeoutSeconds)))
        bodyTimer = context.eventLoop.assumeIsolated().scheduleTask(in: window) { [self] in
            bodyTimer = nil
            guard case .receiving(let head, _, _) = state, let context = self.context else { return }
            let needed = Int64(limits.minBodyBytesPerSecond) * window.nanoseconds / 1_000_000_000
            if Int64(bodyWindowBytes) < max(1, needed) {
                security.counters.limitHits.add(1)
                security.noticeLog.notice(
                    logger, "closing a connection whose request body stalled", metadata: ["peer": "\(remoteAddress)"])
                let slow = RESTError(
                    .requestTimeout,
                    "the request body arrived slower than \(limits.minBodyBytesPerSecond) bytes a second (minBodyBytesPerSecond)"
                )
                refuseBeforeBody(RESTResponse.error(slow), head: head, context: context)
                return
            }
            bodyWindowBytes = 0
            armBodyTimer(context: context)
        }
    }

    private var bodyTooLarge: RESTError {
        RESTError(.payloadTooLarge, "the body exceeds the maximum of \(configuration.maxMessageBytes) bytes")
    }

    private func handle(
        head: HTTPRequestHead, headers: RequestHeaders, body: [UInt8], context: ChannelHandlerContext
    ) {
        requestsServed += 1
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
                    var response = RESTResponse(
                        status: HTTPResponseStatus(statusCode: answer.status), body: answer.body,
                        headers: [("Cache-Control", "no-store")])
                    response.contentType = answer.contentType
                    finish(response, head: head, call: call, context: context)
                case .failure(let error):
                    finish(
                        RESTResponse.error(RESTError(.internalServerError, "\(error)")), head: head, call: call,
                        context: context)
                }
            }
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
    private func submit(
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
    private func adminRefusal(_ call: RESTCall) -> RESTError? {
        guard !security.isOpen else { return nil }
        guard let credential = call.credential else { return RESTError(.unauthorized, "Permission denied") }
        switch security.authenticate(credential, from: remoteAddress, now: clock(), logger: logger) {
        case .success(let identity) where identity.isAdmin: return nil
        case .success: return RESTError(.unauthorized, "Permission denied")
        case .failure(let error): return RESTRender.failure(error, call: call)
        }
    }

    /// Counts a request answered before it reached the engine.
    private func countRejection(_ error: RESTError) {
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
    /// open mode credentials are accepted and ignored (security.md §3).
    private func identityStep(for call: RESTCall) -> Result<AuthStep?, RESTError> {
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
            switch security.authenticate(credential, from: remoteAddress, now: clock(), logger: logger) {
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

    private func answer(_ body: ResponseBody, context: ChannelHandlerContext) {
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

    // MARK: Answers

    /// Writes the answer to the current request and gets ready for the next one.
    private func finish(
        _ response: RESTResponse, head: HTTPRequestHead, call: RESTCall?, context: ChannelHandlerContext
    ) {
        var response = response
        if let call { RESTRender.finish(&response, call: call) }
        let keepAlive = head.isKeepAlive && !closeAfterAnswer
        state = keepAlive ? .idle : .closed
        write(
            response, for: head, isHead: call?.isHead ?? (head.method == .HEAD), keepAlive: keepAlive,
            closeWhenWritten: true, context: context)
        if keepAlive {
            armIdleTimer(context: context, timeout: .seconds(Int64(security.limits.idleTimeoutSeconds)))
            // The next request waits until the peer has taken this answer (`channelWritabilityChanged`).
            if !context.channel.isWritable { blockedOnOutput = true }
            processQueued(context: context)
        }
    }

    private func write(
        _ response: RESTResponse, for head: HTTPRequestHead, isHead: Bool, keepAlive: Bool,
        closeWhenWritten: Bool, context: ChannelHandlerContext
    ) {
        var buffer = context.channel.allocator.buffer(capacity: 320 + response.body.count)
        Self.writeStatusLine(response.status, version: head.version, allowOrigin: allowOrigin, into: &buffer)
        if let contentType = response.contentType { Self.writeHeader("Content-Type", contentType, into: &buffer) }
        for (name, value) in response.headers { Self.writeHeader(name, value, into: &buffer) }
        if response.status != .notModified, response.status != .noContent {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(response.body.count))
            buffer.writeStaticString("\r\n")
        }
        if !keepAlive { buffer.writeStaticString("Connection: close\r\n") }
        buffer.writeStaticString("\r\n")
        if !isHead { buffer.writeBytes(response.body) }
        progress.add(buffer.readableBytes)
        guard !keepAlive, closeWhenWritten else {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// The status line and the headers every answer carries (rest.md §5, §7).
    private static func writeStatusLine(
        _ status: HTTPResponseStatus, version: HTTPVersion, allowOrigin: String, into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString(version.major == 1 && version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(status.reasonPhrase)
        if allowOrigin == "*" {
            buffer.writeStaticString(
                "\r\nCache-Control: no-cache\r\nAccess-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: ETag, X-Hearth-Rev, X-Hearth-Warning\r\n"
            )
        } else {
            // An open server names the one origin it allows (none for a refused one), and says
            // that the answer depends on it.
            buffer.writeStaticString("\r\nCache-Control: no-cache\r\nVary: Origin\r\n")
            if !allowOrigin.isEmpty { writeHeader("Access-Control-Allow-Origin", allowOrigin, into: &buffer) }
            buffer.writeStaticString("Access-Control-Expose-Headers: ETag, X-Hearth-Rev, X-Hearth-Warning\r\n")
        }
    }

    /// One header line; a name or value with a line break or another control character (which
    /// could only come from a bug, the values being built or checked here) is left out rather
    /// than let split the response.
    private static func writeHeader(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        func isSafe(_ text: String) -> Bool { text.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F } }
        guard isSafe(name), isSafe(value) else { return }
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }

    // MARK: Streams

    private func startStream(
        sub: Int, rev: UInt64, warning: String?, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        // HTTP/1.1 streams are chunked; HTTP/1.0 ones end when the connection closes.
        chunked = !(head.version.major == 1 && head.version.minor == 0)
        var buffer = context.channel.allocator.buffer(capacity: 320)
        Self.writeStatusLine(.ok, version: head.version, allowOrigin: allowOrigin, into: &buffer)
        buffer.writeStaticString("Content-Type: text/event-stream; charset=utf-8\r\nX-Hearth-Rev: ")
        buffer.writeString(String(rev))
        buffer.writeStaticString("\r\n")
        if let warning { Self.writeHeader("X-Hearth-Warning", RESTRender.asciiEscaped(warning), into: &buffer) }
        buffer.writeStaticString(chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Connection: close\r\n\r\n")
        state = .streaming(Stream(head: head, sub: sub))
        engine.metrics.streamOpened()
        streamCounted = true
        progress.add(buffer.readableBytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
        lastStreamWrite = .now()
        armKeepAlive(context: context)
        if closeAfterAnswer { endStream(with: nil, context: context) }
    }

    private func writeStreamBytes(_ bytes: inout ByteBuffer, context: ChannelHandlerContext) {
        let count = bytes.readableBytes
        // A reader too slow to keep its unsent output under the bound is cut (docs/REST.md
        // "Streaming"), and so is one holding much while the server's buffers are spent.
        let overBudget =
            outstandingBytes + count > BufferBudget.smallHolding && !context.channel.isWritable
            && security.buffers.isSpent
        if outstandingBytes + count > configuration.maxOutboundBytes || overBudget {
            logger.warning(
                "closing a slow event-stream reader",
                metadata: [
                    "pendingBytes": "\(outstandingBytes)",
                    "reason": "\(overBudget ? "maxBufferedBytes" : "maxOutboundBytes")",
                ])
            state = .closed
            charge.update(0, in: security.buffers)
            context.close(promise: nil)
            return
        }
        outstandingBytes += count
        if outstandingBytes > BufferBudget.smallHolding || charge.bytes > 0 {
            charge.update(outstandingBytes, in: security.buffers)
        }
        progress.add(count)
        lastStreamWrite = .now()
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [self] _ in
            outstandingBytes -= count
            if charge.bytes > 0 { charge.update(outstandingBytes, in: security.buffers) }
        }
        if chunked {
            var framed = context.channel.allocator.buffer(capacity: count + 12)
            framed.writeString(String(count, radix: 16))
            framed.writeStaticString("\r\n")
            framed.writeBuffer(&bytes)
            framed.writeStaticString("\r\n")
            context.write(wrapOutboundOut(framed), promise: promise)
        } else {
            context.write(wrapOutboundOut(bytes), promise: promise)
        }
    }

    /// Sends `last` (a `cancel` or `auth_revoked` event) if given, ends the stream with its last
    /// chunk, and closes the connection.
    private func endStream(with last: [UInt8]?, context: ChannelHandlerContext) {
        guard case .streaming = state else { return }
        if var last = last.map({ context.channel.allocator.buffer(bytes: $0) }) {
            writeStreamBytes(&last, context: context)
        }
        state = .closed
        keepAliveTimer?.cancel()
        let last = context.channel.allocator.buffer(staticString: chunked ? "0\r\n\r\n" : "")
        progress.add(last.readableBytes)
        context.writeAndFlush(wrapOutboundOut(last)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// A `keep-alive` event after `sseKeepAliveSeconds` without any other.
    private func armKeepAlive(context: ChannelHandlerContext) {
        let interval = TimeAmount.seconds(Int64(configuration.sseKeepAliveSeconds))
        keepAliveTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: lastStreamWrite + interval) {
            [self] in
            guard case .streaming = state, let context = self.context else { return }
            if NIODeadline.now() >= lastStreamWrite + interval {
                var keepAlive = context.channel.allocator.buffer(bytes: StreamEvents.keepAlive)
                writeStreamBytes(&keepAlive, context: context)
                context.flush()
            }
            armKeepAlive(context: context)
        }
    }

    /// Closes the connection once it has been idle (no request under way) for `timeout` since
    /// the last answer. One timer at a time, re-armed when it fires early rather than per request.
    private func armIdleTimer(context: ChannelHandlerContext, timeout: TimeAmount) {
        idleTimeout = timeout
        lastActivity = .now()
        if idleTimer == nil { scheduleIdleCheck(context: context, at: lastActivity + timeout) }
    }

    private func scheduleIdleCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleTimer = nil
            // A connection busy with a request (or a stream) is re-armed when it is next idle.
            guard case .idle = state, let context = self.context else { return }
            let due = lastActivity + idleTimeout
            if !context.channel.isWritable {
                // The last answer is still on its way: not idle (the stall timer watches it).
                scheduleIdleCheck(context: context, at: NIODeadline.now() + idleTimeout)
            } else if NIODeadline.now() >= due {
                state = .closed
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context: context, at: due)
            }
        }
    }

    // MARK: Output the peer does not take

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallTimer?.cancel()
            stallTimer = nil
            if case .streaming = state {} else { charge.update(0, in: security.buffers) }
            if blockedOnOutput {
                blockedOnOutput = false
                processQueued(context: context)
            }
        } else {
            let buffered = bufferedBytes(context)
            if case .streaming = state {} else { charge.update(buffered, in: security.buffers) }
            if closeIfOverBudget(buffered: buffered, context: context) { return }
            progress.restart(stillBuffered: buffered)
            armStallTimer(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// The bytes the channel holds that have not reached the socket.
    private func bufferedBytes(_ context: ChannelHandlerContext) -> Int {
        (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
    }

    /// While the server's buffers are spent, a connection whose peer is not taking a sizeable
    /// output is the one to let go. True when it closed the connection.
    private func closeIfOverBudget(buffered: Int, context: ChannelHandlerContext) -> Bool {
        guard buffered > BufferBudget.smallHolding, security.buffers.isSpent else { return false }
        security.counters.limitHits.add(1)
        logger.warning(
            "closing a connection that does not read while the server's buffers are full",
            metadata: ["pendingBytes": "\(buffered)", "peer": "\(remoteAddress)"])
        state = .closed
        charge.update(0, in: security.buffers)
        context.close(promise: nil)
        return true
    }

    /// Checks every `writeStallTimeoutSeconds` while the channel is unwritable: a peer that took
    /// nothing in that time is disconnected.
    private func armStallTimer(context: ChannelHandlerContext) {
        guard stallTimer == nil else { return }
        let timeout = TimeAmount.seconds(Int64(security.limits.writeStallTimeoutSeconds))
        stallTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            stallTimer = nil
            guard let context = self.context, !context.channel.isWritable else { return }
            let buffered = bufferedBytes(context)
            if closeIfOverBudget(buffered: buffered, context: context) { return }
            if progress.moved(stillBuffered: buffered) {
                armStallTimer(context: context)
                return
            }
            security.counters.limitHits.add(1)
            security.noticeLog.notice(
                logger, "closing a connection whose peer stopped reading",
                metadata: ["peer": "\(remoteAddress)", "pendingBytes": "\(buffered)"])
            state = .closed
            charge.update(0, in: security.buffers)
            context.close(promise: nil)
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
        case .waiting, .closed:
            break
        }
    }
}
