import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One HTTP/1.1 request on a connection of its own (JWT key fetches, trigger deliveries): a
/// deadline for the whole exchange, connecting included, a cap on the answer's body, certificate
/// verification for https (the context's), no redirects followed.
enum HTTPRequester {
    struct Request: Sendable {
        var method: HTTPMethod = .GET
        let url: HTTPURL
        /// Sent after `Host`, `User-Agent`, `Connection` and (with a body) `Content-Length`.
        var headers: [(name: String, value: String)] = []
        /// Sent with a `Content-Length` unless empty on a GET.
        var body: [UInt8] = []
    }

    struct Response: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
    }

    /// Why a request failed.
    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) { self.description = description }
    }

    /// A client context with full certificate verification against the system's trust roots,
    /// or `caFile`'s certificates.
    static func tlsContext(caFile: String?) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .fullVerification
        if let caFile { configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) }
        return try NIOSSLContext(configuration: configuration)
    }

    /// Sends `request` and returns the answer; `tls` is required for an https URL.
    static func send(
        _ request: Request, tls: NIOSSLContext?, group: any EventLoopGroup, timeout: TimeAmount, maxBytes: Int
    ) async throws -> Response {
        let url = request.url
        guard tls != nil || !url.secure else { throw Failure("an https URL needs a TLS context") }
        let loop = group.next()
        let promise = loop.makePromise(of: Response.self)
        let deadline = loop.scheduleTask(in: timeout) {
            promise.fail(Failure("no complete answer within \(timeout.nanoseconds / 1_000_000) milliseconds"))
        }
        let connected = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls, url.secure {
                        let handler = try NIOSSLClientHandler(
                            context: tls, serverHostname: url.hostIsAddress ? nil : url.host)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        RequestHandler(request: request, maxBytes: maxBytes, promise: promise))
                }
            }
            .connect(host: url.host, port: url.port)
        connected.whenFailure { promise.fail($0) }
        promise.futureResult.whenComplete { _ in
            deadline.cancel()
            connected.whenSuccess { $0.close(promise: nil) }
        }
        return try await promise.futureResult.get()
    }

    /// Sends the request once connected and collects the answer, up to `maxBytes` of body.
    private final class RequestHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        private let request: Request
        private let maxBytes: Int
        private let promise: EventLoopPromise<Response>
        private var head: HTTPResponseHead?
        private var body: [UInt8] = []

        init(request: Request, maxBytes: Int, promise: EventLoopPromise<Response>) {
            self.request = request
            self.maxBytes = maxBytes
            self.promise = promise
        }

        func channelActive(context: ChannelHandlerContext) {
            var head = HTTPRequestHead(version: .http1_1, method: request.method, uri: request.url.target)
            head.headers.add(name: "Host", value: request.url.hostHeader)
            head.headers.add(name: "User-Agent", value: "hearthd/\(hearthVersion)")
            head.headers.add(name: "Connection", value: "close")
            if !request.body.isEmpty || request.method != .GET {
                head.headers.add(name: "Content-Length", value: "\(request.body.count)")
            }
            for header in request.headers { head.headers.add(name: header.name, value: header.value) }
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !request.body.isEmpty {
                let buffer = context.channel.allocator.buffer(bytes: request.body)
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let received):
                head = received
                if let length = received.headers.first(name: "Content-Length").flatMap({ Int($0) }),
                    length > maxBytes
                {
                    fail(context, Failure("the answer is larger than \(maxBytes) bytes"))
                }
            case .body(let buffer):
                guard body.count + buffer.readableBytes <= maxBytes else {
                    fail(context, Failure("the answer is larger than \(maxBytes) bytes"))
                    return
                }
                body.append(contentsOf: buffer.readableBytesView)
            case .end:
                guard let head else { return }
                promise.succeed(Response(status: Int(head.status.code), headers: head.headers, body: body))
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(Failure("the connection closed before the answer ended"))
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            fail(context, error)
        }

        private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
            promise.fail(error)
            body = []
            context.close(promise: nil)
        }
    }
}

/// An http or https URL (`jwtPublicKeysURL`, a trigger's `url`): no user information, printable
/// ASCII only.
struct HTTPURL: Sendable, Equatable {
    let text: String
    let secure: Bool
    let host: String
    let port: Int
    /// The path and query, as the request line carries them.
    let target: String

    init(_ text: String, source: String, setting: String = "jwtPublicKeysURL") throws(ConfigurationError) {
        func bad(_ why: String) -> ConfigurationError {
            ConfigurationError("\(source): \"\(setting)\" \(why)")
        }
        guard !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw bad("must be an http:// or https:// URL of printable ASCII characters")
        }
        let rest: Substring
        if text.lowercased().hasPrefix("https://") {
            secure = true
            rest = text.dropFirst(8)
        } else if text.lowercased().hasPrefix("http://") {
            secure = false
            rest = text.dropFirst(7)
        } else {
            throw bad("must be an http:// or https:// URL, not \"\(text)\"")
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = rest[authorityEnd...]
        if let fragment = target.firstIndex(of: "#") { target = target[..<fragment] }
        self.target = target.isEmpty ? "/" : target.hasPrefix("?") ? "/" + target : String(target)
        guard !authority.contains("@") else { throw bad("must not carry a user name or password") }
        var host = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw bad("has an unclosed IPv6 address") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("has text after its IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty else { throw bad("has no host") }
        self.host = String(host)
        if let portText {
            guard let port = Int(portText), (1...65535).contains(port) else { throw bad("has an invalid port") }
            self.port = port
        } else {
            self.port = secure ? 443 : 80
        }
        self.text = text
    }

    /// The `Host` header.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Whether the host is an IP address (no SNI; the certificate must name the address).
    var hostIsAddress: Bool {
        host.contains(":") || host.allSatisfy { $0 == "." || $0.isASCII && $0.isNumber }
    }
}
