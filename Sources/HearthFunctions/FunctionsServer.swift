public import Logging
import NIOConcurrencyHelpers
public import NIOCore
import NIOHTTP1
public import NIOPosix

/// An HTTP server that receives Hearth's trigger deliveries and hands them to `Functions`.
///
/// Each request must be a `POST` with `Content-Type: application/json`, a `Hearth-Signature`
/// header that `SignatureVerifier` accepts, and a body that decodes as a `TriggerEvent` (whose id
/// matches `Hearth-Event-Id` when that header is present). The answer is:
/// - 200 once every matching handler returned (also when none matched, or when the id was in the
///   seen-id window): Hearth counts the event as delivered;
/// - 400 for a bad or missing signature or a body that is not an event, 405 for another method,
///   404 for another path (when `Configuration.path` is set), 415 for another content type, 413
///   for a body over `maxBodyBytes`, 408 when the request is not received within
///   `requestTimeout`: Hearth retries these, and they do not go away by themselves, so they end
///   in the trigger's dead-letter list;
/// - 500 when a handler throws: Hearth retries the event later (with every handler again).
///
/// A handler runs while the request waits; Hearth gives up on an answer after its trigger's
/// `timeoutMs` and retries, so a handler slower than that runs again for the same event.
public final class FunctionsServer: Sendable {
    /// Where and how the server listens.
    public struct Configuration: Sendable {
        /// The address to listen on.
        public var host: String
        /// The port to listen on (0: any free port, see `localPort`).
        public var port: Int
        /// The only request path answered (e.g. `/hook`), or nil for any path.
        public var path: String?
        /// The largest body accepted; a larger one is answered 413.
        public var maxBodyBytes: Int
        /// How long a request may take to arrive, from its first line to the end of its body.
        public var requestTimeout: TimeAmount
        /// How long a kept-alive connection may sit with no request before it is closed.
        public var idleTimeout: TimeAmount
        /// The event loops the server runs on.
        public var eventLoopGroup: any EventLoopGroup
        /// Where refusals and handler errors are logged.
        public var logger: Logger

        public init(
            host: String = "127.0.0.1", port: Int = 8080, path: String? = nil, maxBodyBytes: Int = 8 << 20,
            requestTimeout: TimeAmount = .seconds(30), idleTimeout: TimeAmount = .seconds(60),
            eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
            logger: Logger = Logger(label: "hearth.functions")
        ) {
            self.host = host
            self.port = port
            self.path = path
            self.maxBodyBytes = maxBodyBytes
            self.requestTimeout = requestTimeout
            self.idleTimeout = idleTimeout
            self.eventLoopGroup = eventLoopGroup
            self.logger = logger
        }
    }

    /// Why the server could not start.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private let functions: Functions
    private let verifier: SignatureVerifier
    private let configuration: Configuration
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)

    /// A server dispatching verified deliveries to `functions`. Call `start()` or `run()`.
    public init(functions: Functions, verifier: SignatureVerifier, configuration: Configuration = Configuration()) {
        self.functions = functions
        self.verifier = verifier
        self.configuration = configuration
    }

    /// The port the server listens on, once started.
    public var localPort: Int? {
        channel.withLockedValue { $0?.localAddress?.port }
    }

    /// Binds and starts accepting deliveries; returns the port listened on.
    @discardableResult
    public func start() async throws -> Int {
        let configuration = self.configuration
        let context = RequestContext(functions: functions, verifier: verifier, configuration: configuration)
        let bootstrap = ServerBootstrap(group: configuration.eventLoopGroup)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(readTimeout: configuration.idleTimeout))
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(FunctionsRequestHandler(context: context))
                }
            }
        let bound = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        channel.withLockedValue { $0 = bound }
        guard let port = bound.localAddress?.port else {
            try? await bound.close()
            throw StartError(description: "the server's socket has no port")
        }
        configuration.logger.info("listening for trigger deliveries", metadata: ["port": "\(port)"])
        return port
    }

    /// Starts the server (when not started) and returns once it is stopped.
    public func run() async throws {
        if channel.withLockedValue({ $0 }) == nil { try await start() }
        guard let bound = channel.withLockedValue({ $0 }) else { return }
        try await bound.closeFuture.get()
    }

    /// Stops accepting deliveries. Connections already open finish their request.
    public func stop() async throws {
        guard let bound = channel.withLockedValue({ $0 }) else { return }
        do {
            try await bound.close()
        } catch ChannelError.alreadyClosed {
            return
        }
    }
}

/// What every connection's handler shares.
private struct RequestContext: Sendable {
    var functions: Functions
    var verifier: SignatureVerifier
    var configuration: FunctionsServer.Configuration
}

/// One connection: collects a request (bounded in size and time), verifies, decodes and
/// dispatches it, and answers.
private final class FunctionsRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        /// Between requests.
        case idle
        /// Collecting a request's body.
        case receiving(HTTPRequestHead, ByteBuffer)
        /// An answer was sent before the request ended (too large, too slow): the rest is dropped.
        case discarding
        /// A complete request is being handled.
        case processing
    }

    private let shared: RequestContext
    private var state = State.idle
    private var deadline: Scheduled<Void>?

    init(context: RequestContext) {
        self.shared = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            scheduleDeadline(context: context)
            let limit = shared.configuration.maxBodyBytes
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limit {
                refuse(context: context, .payloadTooLarge, "body over \(limit) bytes")
                return
            }
            state = .receiving(head, context.channel.allocator.buffer(capacity: 0))
        case .body(var chunk):
            guard case .receiving(let head, var body) = state else { return }
            if body.readableBytes + chunk.readableBytes > shared.configuration.maxBodyBytes {
                refuse(context: context, .payloadTooLarge, "body over \(shared.configuration.maxBodyBytes) bytes")
                return
            }
            state = .processing  // released while appending, so that `body` stays uniquely referenced
            body.writeBuffer(&chunk)
            state = .receiving(head, body)
        case .end:
            deadline?.cancel()
            deadline = nil
            switch state {
            case .receiving(let head, let body):
                state = .processing
                process(context: context, head: head, body: body)
            case .discarding:
                // The answer said `Connection: close`; the request is now read to its end, so
                // closing cannot cut the answer off with a reset.
                context.close(promise: nil)
            case .idle, .processing:
                break
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            // Only a connection between requests is idle; a handler may take longer than that.
            if case .idle = state { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    /// Bounds the time from a request's first line to its end: a request still arriving then is
    /// answered 408, and one being discarded after an early answer is cut off.
    private func scheduleDeadline(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: shared.configuration.requestTimeout) {
            [self] in
            deadline = nil
            switch state {
            case .receiving:
                refuse(context: context, .requestTimeout, "request not received in time", closeAfter: true)
            case .discarding:
                context.close(promise: nil)
            case .idle, .processing:
                break
            }
        }
    }

    /// Answers before the request was read to its end, with `Connection: close`; the rest of the
    /// request is read and dropped, and the connection closes at its end (or at the deadline).
    private func refuse(
        context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ message: String, closeAfter: Bool = false
    ) {
        state = .discarding
        shared.configuration.logger.notice(
            "refused a delivery", metadata: ["status": "\(status.code)", "why": "\(message)"])
        respond(context: context, status, message, keepAlive: false, closeAfter: closeAfter)
    }

    private func process(context: ChannelHandlerContext, head: HTTPRequestHead, body: ByteBuffer) {
        let keepAlive = head.isKeepAlive
        let logger = shared.configuration.logger
        func answer(_ status: HTTPResponseStatus, _ message: String) {
            if status.code >= 300 {
                logger.notice("refused a delivery", metadata: ["status": "\(status.code)", "why": "\(message)"])
            }
            state = .idle
            respond(context: context, status, message, keepAlive: keepAlive)
        }
        guard head.method == .POST else { return answer(.methodNotAllowed, "only POST") }
        if let path = shared.configuration.path {
            let requested = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
            guard requested == path else { return answer(.notFound, "no such path") }
        }
        let contentType = head.headers.first(name: "content-type") ?? ""
        let mediaType = contentType.split(separator: ";").first.map { trimmingSpaces($0).lowercased() }
        guard mediaType == "application/json" else {
            return answer(.unsupportedMediaType, "Content-Type must be application/json")
        }
        let bytes = body.getBytes(at: body.readerIndex, length: body.readableBytes) ?? []
        do {
            try shared.verifier.verify(header: head.headers.first(name: "hearth-signature"), body: bytes)
        } catch {
            return answer(.badRequest, error.description)
        }
        let event: TriggerEvent
        do {
            event = try TriggerEvent(body: bytes)
        } catch {
            return answer(.badRequest, error.description)
        }
        if let headerID = head.headers.first(name: "hearth-event-id"), headerID != event.id {
            return answer(.badRequest, "Hearth-Event-Id does not match the body's id")
        }
        let functions = shared.functions
        let promise = context.eventLoop.makePromise(of: DispatchOutcome.self)
        promise.completeWithTask { try await functions.dispatch(event) }
        promise.futureResult.assumeIsolated().whenComplete { [self] result in
            state = .idle
            switch result {
            case .success(let outcome):
                respond(context: context, .ok, Self.describe(outcome), keepAlive: keepAlive)
            case .failure(let error):
                logger.error(
                    "a handler failed; the event will be retried",
                    metadata: ["event": "\(event.id)", "path": "\(event.path)", "error": "\(error)"])
                respond(context: context, .internalServerError, "handler failed", keepAlive: keepAlive)
            }
        }
    }

    private static func describe(_ outcome: DispatchOutcome) -> String {
        switch outcome {
        case .handled(let count): return "handled by \(count)"
        case .unmatched: return "no handler matched"
        case .duplicate: return "already handled"
        }
    }

    private func respond(
        context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ message: String, keepAlive: Bool,
        closeAfter: Bool = true
    ) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        let text = message + "\n"
        headers.add(name: "content-type", value: "text/plain; charset=utf-8")
        headers.add(name: "content-length", value: String(text.utf8.count))
        headers.add(name: "connection", value: keepAlive ? "keep-alive" : "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive && closeAfter {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
