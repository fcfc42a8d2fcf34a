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
/// `queued` (reading stops when too many do), so answers leave in request order. A connection is
/// idle, receiving, waiting for the engine, or streaming; a stream is the last thing it does.
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
    private var idleTimeout = HTTPConnectionHandler.headTimeout
    private var lastActivity = NIODeadline.now()
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

    /// The longest a connection may take to send its first request head.
    static let headTimeout = TimeAmount.seconds(30)
    /// The longest a keep-alive connection may stay idle between requests.
    static let idleTimeout = TimeAmount.seconds(60)

    init(
        id: UInt64, engine: Engine, configuration: ServerConfiguration, security: SecurityState,
        wellKnown: @escaping WellKnownResponder, registry: ConnectionRegistry, logger: Logger,
        clock: @escaping @Sendable () -> Int64
    ) {
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
        armIdleTimer(context: context, timeout: Self.headTimeout)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        keepAliveTimer?.cancel()
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
        case let error as HTTPParserError where error == .headerOverflow:
            answerAndClose(
                RESTResponse.error(RESTError(.requestHeaderFieldsTooLarge, "the request head exceeds 64 KiB")))
        case is HTTPParserError:
            answerAndClose(RESTResponse.error(.badRequest("malformed HTTP request")))
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
        state = .closed
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        write(response, for: head, isHead: false, keepAlive: false, context: context)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .idle where queued.isEmpty, .receiving, .discarding:
            process(part, context: context)
        case .idle, .waiting:
            queued.append(part)
        case .streaming, .closed:
            break  // a stream is the last request a connection serves
        }
    }

    func read(context: ChannelHandlerContext) {
        if queued.count >= Self.maxQueuedParts {
            readPaused = true
        } else {
            context.read()
        }
    }

    /// Serves the queued parts of pipelined requests while the connection is free for them.
    private func processQueued(context: ChannelHandlerContext) {
        while let part = queued.first {
            switch state {
            case .idle, .receiving, .discarding:
                queued.removeFirst()
                process(part, context: context)
            case .waiting, .streaming, .closed:
                return
            }
        }
        if readPaused, queued.count < Self.maxQueuedParts / 2 {
            readPaused = false
            context.read()
        }
    }

    private func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            guard case .idle = state else { return }
            let headers = RequestHeaders(head.headers)
            if head.uri.utf8.count + headers.size > 64 * 1024 {
                state = .discarding
                answerAndClose(
                    RESTResponse.error(RESTError(.requestHeaderFieldsTooLarge, "the request head exceeds 64 KiB")))
                return
            }
            if let length = headers.contentLength.flatMap({ Int($0) }),
                length > configuration.maxMessageBytes
            {
                state = .discarding
                answerAndClose(RESTResponse.error(bodyTooLarge))
                return
            }
            state = .receiving(head, headers, body: context.channel.allocator.buffer(capacity: 0))
        case .body(var chunk):
            guard case .receiving(let head, let headers, var body) = state else { return }
            state = .discarding  // drops the buffer's reference while appending
            if body.readableBytes + chunk.readableBytes > configuration.maxMessageBytes {
                answerAndClose(RESTResponse.error(bodyTooLarge))
                return
            }
            body.writeBuffer(&chunk)
            state = .receiving(head, headers, body: body)
        case .end:
            guard case .receiving(let head, let headers, let body) = state else { return }
            handle(head: head, headers: headers, body: Array(body.readableBytesView), context: context)
        }
    }

    private var bodyTooLarge: RESTError {
        RESTError(.payloadTooLarge, "the body exceeds the maximum of \(configuration.maxMessageBytes) bytes")
    }

    private func handle(
        head: HTTPRequestHead, headers: RequestHeaders, body: [UInt8], context: ChannelHandlerContext
    ) {
        requestsServed += 1
        if let refusal {
            state = .closed
            write(
                RESTResponse.error(RESTError(.tooManyRequests, refusal, headers: [("Retry-After", "1")])), for: head,
                isHead: false, keepAlive: false,
                context: context)
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
        switch security.authenticate(credential, from: remoteAddress, now: clock(), logger: logger) {
        case .failure(let error): return .failure(RESTRender.failure(error, call: call))
        case .success(let verified): identity = verified
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
            response, for: head, isHead: call?.isHead ?? (head.method == .HEAD), keepAlive: keepAlive, context: context)
        if keepAlive {
            armIdleTimer(context: context, timeout: Self.idleTimeout)
            processQueued(context: context)
        }
    }

    private func write(
        _ response: RESTResponse, for head: HTTPRequestHead, isHead: Bool, keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        var buffer = context.channel.allocator.buffer(capacity: 320 + response.body.count)
        Self.writeStatusLine(response.status, version: head.version, into: &buffer)
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
        guard !keepAlive else {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// The status line and the headers every answer carries (rest.md §5, §7).
    private static func writeStatusLine(
        _ status: HTTPResponseStatus, version: HTTPVersion, into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString(version.major == 1 && version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString(
            "\r\nCache-Control: no-cache\r\nAccess-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: ETag, X-Hearth-Rev, X-Hearth-Warning\r\n"
        )
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
        Self.writeStatusLine(.ok, version: head.version, into: &buffer)
        buffer.writeStaticString("Content-Type: text/event-stream; charset=utf-8\r\nX-Hearth-Rev: ")
        buffer.writeString(String(rev))
        buffer.writeStaticString("\r\n")
        if let warning { Self.writeHeader("X-Hearth-Warning", RESTRender.asciiEscaped(warning), into: &buffer) }
        buffer.writeStaticString(chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Connection: close\r\n\r\n")
        state = .streaming(Stream(head: head, sub: sub))
        engine.metrics.streamOpened()
        streamCounted = true
        context.write(wrapOutboundOut(buffer), promise: nil)
        lastStreamWrite = .now()
        armKeepAlive(context: context)
        if closeAfterAnswer { endStream(with: nil, context: context) }
    }

    private func writeStreamBytes(_ bytes: inout ByteBuffer, context: ChannelHandlerContext) {
        let count = bytes.readableBytes
        // A reader too slow to keep its unsent output under the bound is cut (rest.md §10).
        if outstandingBytes + count > configuration.maxOutboundBytes {
            logger.warning("closing a slow event-stream reader", metadata: ["pendingBytes": "\(outstandingBytes)"])
            state = .closed
            context.close(promise: nil)
            return
        }
        outstandingBytes += count
        lastStreamWrite = .now()
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [self] _ in outstandingBytes -= count }
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
            if NIODeadline.now() >= due {
                state = .closed
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context: context, at: due)
            }
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
