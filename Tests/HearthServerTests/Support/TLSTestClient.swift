import Foundation
import HearthJSON
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A protocol client over TLS (swift-nio-ssl), for the TLS tests: connects, collects lines.
final class TLSTestClient: Sendable {
    private let state = NIOLockedValueBox<(lines: [String], closed: Bool)>(([], false))
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup

    /// Connects and completes the handshake; throws when it fails.
    init(port: Int, trusting caFile: String, certificate: String? = nil, key: String? = nil) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        if let certificate, let key {
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
        }
        let context = try NIOSSLContext(configuration: tls)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let collector = LineCollector()
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                        try channel.pipeline.syncOperations.addHandler(collector)
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        collector.client = self
        // The server's hello proves the handshake completed.
        _ = try await nextLine()
    }

    fileprivate func received(_ line: String) { state.withLockedValue { $0.lines.append(line) } }

    fileprivate func ended() { state.withLockedValue { $0.closed = true } }

    func nextLine(timeout: Double = 10) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let (line, isClosed) = state.withLockedValue { s -> (String?, Bool) in
                s.lines.isEmpty ? (nil, s.closed) : (s.lines.removeFirst(), s.closed)
            }
            if let line { return line }
            if isClosed { throw TestClient.Failure(description: "connection closed") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        throw TestClient.Failure(description: "timed out waiting for a line")
    }

    func request(_ line: String) async throws -> JSONValue {
        try await channel.writeAndFlush(channel.allocator.buffer(string: line + "\n")).get()
        while true {
            let value = try JSONParser.parse(try await nextLine())
            if value["ok"] != nil { return value }
        }
    }

    func close() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

private final class LineCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    // Set once before any line can arrive that matters; read on the channel's loop.
    weak var client: TLSTestClient?
    private var pending: [UInt8] = []
    private var early: [String] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            if let client {
                for line in early { client.received(line) }
                early.removeAll()
                client.received(line)
            } else {
                early.append(line)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) { client?.ended() }
}
