import NIOCore
import NIOPosix
import NIOSSL

/// `hearthd --health-check`: asks a running server, as its own configuration describes it,
/// whether it is healthy (docs/OBSERVABILITY.md, "Health"). It connects to the line protocol's
/// port and expects the `hello` line, then, unless the HTTP API is off, asks
/// `GET /.well-known/hearth/health` and expects 200. With TLS on (`tlsCertificate`) both speak
/// TLS: to a loopback address without verifying the certificate (the probe and the server are
/// the same machine and the same configuration), to any other address trusting the server's own
/// certificate chain file, the host name unchecked. It is what the container image's
/// HEALTHCHECK runs, so the check works with and without TLS.
public enum HealthProbe {
    /// What went wrong, or nil when the server is healthy. `timeout` bounds each of the two checks.
    public static func check(_ configuration: ServerConfiguration, timeout: TimeAmount = .seconds(2)) async -> String? {
        let host = probeHost(configuration.host)
        let context: NIOSSLContext?
        do {
            context = try tlsContext(configuration, host: host)
        } catch {
            return "cannot set up TLS: \(error)"
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }
        let scheme = context == nil ? "" : " (TLS)"
        do {
            let hello = try await exchange(
                group: group, host: host, port: configuration.port, context: context, send: nil, timeout: timeout)
            guard hello.contains(#""event":"hello""#) else {
                return "\(host):\(configuration.port)\(scheme) answered without a hello line: \(prefix(hello))"
            }
        } catch {
            return "no hello from \(host):\(configuration.port)\(scheme): \(error)"
        }
        guard let httpPort = configuration.httpPort else { return nil }
        do {
            let request = "GET /.well-known/hearth/health HTTP/1.0\r\nHost: \(host)\r\n\r\n"
            let answer = try await exchange(
                group: group, host: host, port: httpPort, context: context, send: request, timeout: timeout)
            let statusLine = answer.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
            guard statusLine.hasPrefix("HTTP/1."), statusLine.contains(" 200 ") else {
                return "GET /.well-known/hearth/health on \(host):\(httpPort)\(scheme) answered \(prefix(statusLine))"
            }
        } catch {
            return "no health answer from \(host):\(httpPort)\(scheme): \(error)"
        }
        return nil
    }

    /// Where to connect to a server bound to `host`: the loopback address for a wildcard.
    static func probeHost(_ host: String) -> String {
        switch host {
        case "", "0.0.0.0", "localhost": return "127.0.0.1"
        case "::", "[::]", "[::1]": return "::1"
        default: return host
        }
    }

    /// The client side of the configuration's TLS, nil when TLS is off.
    private static func tlsContext(_ configuration: ServerConfiguration, host: String) throws -> NIOSSLContext? {
        guard let certificate = configuration.tlsCertificate else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        if isLoopback(host) {
            tls.certificateVerification = .none
        } else {
            tls.certificateVerification = .noHostnameVerification
            tls.additionalTrustRoots = [.file(certificate)]
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// Connects, sends `send` (when given), and returns what arrives until the first line ends
    /// (nothing to send) or the server closes (a request sent).
    private static func exchange(
        group: MultiThreadedEventLoopGroup, host: String, port: Int, context: NIOSSLContext?, send: String?,
        timeout: TimeAmount
    ) async throws -> String {
        let loop = group.next()
        let done = loop.makePromise(of: String.self)
        let collector = Collector(untilLineEnd: send == nil, done: done)
        let timer = loop.scheduleTask(in: timeout) {
            collector.finish(.failure(ProbeError("no answer within \(timeout.seconds) s")))
        }
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let context {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOSSLClientHandler(context: context, serverHostname: nil))
                        }
                        try channel.pipeline.syncOperations.addHandler(collector)
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            // The exchange ends here: its promise too (NIO traps on a promise left unfulfilled).
            timer.cancel()
            try? await loop.submit { collector.finish(.failure(error)) }.get()
            throw error
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        if let send { channel.writeAndFlush(channel.allocator.buffer(string: send), promise: nil) }
        return try await done.futureResult.get()
    }

    private static func prefix(_ text: String) -> String {
        text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}

private struct ProbeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension TimeAmount {
    fileprivate var seconds: Double { Double(nanoseconds) / 1e9 }
}

/// Collects what a connection receives, until the first line ends or the server closes; 64 KiB
/// at most.
private final class Collector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let untilLineEnd: Bool
    private let done: EventLoopPromise<String>
    // Touched only on the channel's event loop.
    private var received: [UInt8] = []
    private var finished = false

    init(untilLineEnd: Bool, done: EventLoopPromise<String>) {
        self.untilLineEnd = untilLineEnd
        self.done = done
    }

    /// Completes the exchange once (on the channel's event loop).
    func finish(_ result: Result<String, any Error>) {
        guard !finished else { return }
        finished = true
        done.completeWith(result)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if let bytes = buffer.readBytes(length: buffer.readableBytes) { received += bytes }
        if untilLineEnd, let end = received.firstIndex(of: UInt8(ascii: "\n")) {
            finish(.success(String(decoding: received[..<end], as: UTF8.self)))
        } else if received.count > 65536 {
            finish(.success(String(decoding: received, as: UTF8.self)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.success(String(decoding: received, as: UTF8.self)))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }
}
