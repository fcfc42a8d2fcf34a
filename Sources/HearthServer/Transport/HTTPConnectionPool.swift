import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Kept-alive HTTP/1.1 connections to one origin (a trigger's receiver), one request at a time
/// on each, as many as requests in flight. Each request has a deadline over connecting and its
/// answer and a cap on the answer's body, as `HTTPRequester`'s; https is verified with the
/// context given. A connection is kept after an answer unless it says `Connection: close`, and
/// closed after `idleTimeout` unused. A request that fails on a reused connection before any of
/// its answer arrived (the receiver closed it meanwhile) is sent once more on a new one.
///
/// Confined to `loop`: call `send` from any thread, it hops there.
final class HTTPConnectionPool: @unchecked Sendable {
    let loop: any EventLoop
    let url: HTTPURL
    let tls: NIOSSLContext?
    let idleTimeout: TimeAmount
    private var idle: [(connection: KeptConnection, since: NIODeadline)] = []
    private var closed = false

    init(url: HTTPURL, tls: NIOSSLContext?, loop: any EventLoop, idleTimeout: TimeAmount = .seconds(30)) {
        self.url = url
        self.tls = tls
        self.loop = loop
        self.idleTimeout = idleTimeout
    }

    /// Sends `request` (to this pool's origin) and returns the answer.
    func send(
        _ request: HTTPRequester.Request, timeout: TimeAmount, maxBytes: Int
    ) -> EventLoopFuture<
        HTTPRequester.Response
    > {
        loop.flatSubmit {
            let promise = self.loop.makePromise(of: HTTPRequester.Response.self)
            let deadline = self.loop.scheduleTask(in: timeout) {
                promise.fail(
                    HTTPRequester.Failure("no complete answer within \(timeout.nanoseconds / 1_000_000) milliseconds"))
            }
            promise.futureResult.whenComplete { _ in deadline.cancel() }
            self.attempt(request, maxBytes: maxBytes, timeout: timeout, promise: promise, mayRetry: true)
            return promise.futureResult
        }
    }

    /// Closes every connection; later sends fail.
    func close() {
        loop.execute {
            self.closed = true
            for (connection, _) in self.idle { connection.channel.close(promise: nil) }
            self.idle.removeAll()
        }
    }

    private func attempt(
        _ request: HTTPRequester.Request, maxBytes: Int, timeout: TimeAmount,
        promise: EventLoopPromise<HTTPRequester.Response>, mayRetry: Bool
    ) {
        guard !closed else { return promise.fail(HTTPRequester.Failure("the trigger was removed")) }
        guard tls != nil || !url.secure else {
            return promise.fail(HTTPRequester.Failure("an https URL needs a TLS context"))
        }
        let now = NIODeadline.now()
        while let (connection, since) = idle.popLast() {
            guard connection.channel.isActive, now - since < idleTimeout else {
                connection.channel.close(promise: nil)
                continue
            }
            // A receiver that had closed it before any of the answer: once more, on a new one.
            var retry: (@Sendable () -> Void)?
            if mayRetry {
                retry = {
                    self.attempt(request, maxBytes: maxBytes, timeout: timeout, promise: promise, mayRetry: false)
                }
            }
            exchange(request, on: connection, maxBytes: maxBytes, promise: promise, retry: retry)
            return
        }
        let handler = KeptConnectionHandler()
        let connected = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { [url, tls] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls, url.secure {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: url.hostIsAddress ? nil : url.host))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: url.host, port: url.port)
        connected.whenComplete { result in
            switch result {
            case .failure(let error):
                promise.fail(error)
            case .success(let channel):
                self.exchange(
                    request, on: KeptConnection(channel: channel, handler: handler), maxBytes: maxBytes,
                    promise: promise, retry: nil)
            }
        }
    }

    /// Sends `request` on `connection` and completes `promise` with its answer, keeping the
    /// connection for the next request when it may be. A failure before any of the answer
    /// arrived runs `retry` instead, when there is one.
    private func exchange(
        _ request: HTTPRequester.Request, on connection: KeptConnection, maxBytes: Int,
        promise: EventLoopPromise<HTTPRequester.Response>, retry: (@Sendable () -> Void)?
    ) {
        let exchange = loop.makePromise(of: HTTPRequester.Response.self)
        connection.handler.send(request, maxBytes: maxBytes, promise: exchange)
        // A deadline that passes closes the connection: its answer may still come.
        promise.futureResult.whenFailure { _ in connection.channel.close(promise: nil) }
        exchange.futureResult.whenComplete { result in
            switch result {
            case .success(let response):
                self.keepOrClose(connection, after: response)
                promise.succeed(response)
            case .failure(let error):
                connection.channel.close(promise: nil)
                if !connection.handler.answerStarted, let retry {
                    retry()
                } else {
                    promise.fail(error)
                }
            }
        }
    }

    private func keepOrClose(_ connection: KeptConnection, after response: HTTPRequester.Response) {
        let closing = response.headers[canonicalForm: "connection"].contains { $0.lowercased() == "close" }
        guard !closed, !closing, connection.channel.isActive else {
            connection.channel.close(promise: nil)
            return
        }
        idle.append((connection, .now()))
    }
}

/// A kept connection and the handler that runs its exchanges.
struct KeptConnection {
    let channel: any Channel
    let handler: KeptConnectionHandler
}

/// Runs one request at a time on its connection: writes it, collects the answer up to a cap, and
/// completes the exchange's promise; the connection's end fails an exchange in progress.
final class KeptConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private var context: ChannelHandlerContext?
    private var promise: EventLoopPromise<HTTPRequester.Response>?
    private var maxBytes = 0
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    /// Whether any of the current answer arrived.
    private(set) var answerStarted = false
    private var inactive = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes `request`; `promise` gets its answer. On the channel's loop.
    func send(_ request: HTTPRequester.Request, maxBytes: Int, promise: EventLoopPromise<HTTPRequester.Response>) {
        guard let context, !inactive else {
            return promise.fail(HTTPRequester.Failure("the connection closed before the request was sent"))
        }
        self.promise = promise
        self.maxBytes = maxBytes
        head = nil
        body = []
        answerStarted = false
        var head = HTTPRequestHead(version: .http1_1, method: request.method, uri: request.url.target)
        head.headers.add(name: "Host", value: request.url.hostHeader)
        head.headers.add(name: "User-Agent", value: "hearthd/\(hearthVersion)")
        head.headers.add(name: "Content-Length", value: "\(request.body.count)")
        for header in request.headers { head.headers.add(name: header.name, value: header.value) }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !request.body.isEmpty {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: request.body)))), promise: nil
            )
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        answerStarted = true
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
            if let length = received.headers.first(name: "Content-Length").flatMap({ Int($0) }), length > maxBytes {
                fail(context, HTTPRequester.Failure("the answer is larger than \(maxBytes) bytes"))
            }
        case .body(let buffer):
            guard body.count + buffer.readableBytes <= maxBytes else {
                return fail(context, HTTPRequester.Failure("the answer is larger than \(maxBytes) bytes"))
            }
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head, let promise else { return }
            self.promise = nil
            promise.succeed(HTTPRequester.Response(status: Int(head.status.code), headers: head.headers, body: body))
            body = []
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        promise?.fail(HTTPRequester.Failure("the connection closed before the answer ended"))
        promise = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context, error)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        promise?.fail(error)
        promise = nil
        body = []
        context.close(promise: nil)
    }
}
