import NIOCore
import NIOHTTP1

/// One request to the etcd gateway, written into a connection's pipeline; the handler completes
/// `response` exactly once.
struct EtcdHTTPRequest: Sendable {
    /// How the answer is delivered.
    enum Response: Sendable {
        /// The whole answer once it has ended.
        case whole(EventLoopPromise<EtcdHTTPResponse>)
        /// The body as it arrives (a watch); a non-200 answer ends the stream with its status.
        case stream(AsyncThrowingStream<[UInt8], any Error>.Continuation)
    }

    let path: String
    let body: [UInt8]
    let hostHeader: String
    /// How long to wait for the answer's head (for a whole answer: for its end).
    let timeout: TimeAmount
    let response: Response
}

/// A complete answer from the gateway.
struct EtcdHTTPResponse: Sendable {
    let status: Int
    let body: [UInt8]
    let keepAlive: Bool
}

/// Why a request failed on its connection; `EtcdHTTPClient` adds the endpoint.
enum EtcdHTTPFailure: Error, Sendable {
    case timeout
    case closed
    /// A streamed request was answered with this status and body.
    case status(Int, [UInt8])
    /// A request was written while another was still in flight on the same connection.
    case busy
}

/// The client side of one keep-alive HTTP/1.1 connection to etcd: one request at a time, the
/// answer collected (or streamed) and handed to the request's promise or continuation.
final class EtcdClientHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = EtcdHTTPRequest
    typealias OutboundOut = HTTPClientRequestPart

    private var pending: EtcdHTTPRequest.Response?
    private var status = 0
    private var keepAlive = true
    private var body: [UInt8] = []
    private var timeout: Scheduled<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        guard pending == nil else {
            Self.fail(request.response, EtcdHTTPFailure.busy)
            promise?.fail(EtcdHTTPFailure.busy)
            return
        }
        pending = request.response
        status = 0
        keepAlive = true
        body = []
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: request.path)
        head.headers.add(name: "Host", value: request.hostHeader)
        head.headers.add(name: "Content-Type", value: "application/json")
        head.headers.add(name: "Content-Length", value: String(request.body.count))
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(
            wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: request.body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timeout = context.eventLoop.assumeIsolated().scheduleTask(in: request.timeout) { [self] in
            guard pending != nil else { return }
            failPending(EtcdHTTPFailure.timeout)
            loopBound.value.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            keepAlive = head.isKeepAlive
            if case .stream = pending, status == 200 {
                // A watch lives as long as it is wanted: the timeout covers only its start.
                timeout?.cancel()
                timeout = nil
            }
        case .body(let buffer):
            if case .stream(let continuation) = pending, status == 200 {
                continuation.yield(Array(buffer.readableBytesView))
            } else {
                body.append(contentsOf: buffer.readableBytesView)
            }
        case .end:
            timeout?.cancel()
            timeout = nil
            let finished = pending
            pending = nil
            switch finished {
            case .whole(let promise):
                promise.succeed(EtcdHTTPResponse(status: status, body: body, keepAlive: keepAlive))
            case .stream(let continuation):
                if status == 200 {
                    continuation.finish()
                } else {
                    continuation.finish(throwing: EtcdHTTPFailure.status(status, body))
                }
            case nil:
                break
            }
            body = []
            if !keepAlive { context.close(promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failPending(EtcdHTTPFailure.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failPending(error)
        context.close(promise: nil)
    }

    private func failPending(_ error: any Error) {
        timeout?.cancel()
        timeout = nil
        if let pending {
            self.pending = nil
            Self.fail(pending, error)
        }
    }

    private static func fail(_ response: EtcdHTTPRequest.Response, _ error: any Error) {
        switch response {
        case .whole(let promise): promise.fail(error)
        case .stream(let continuation): continuation.finish(throwing: error)
        }
    }
}
