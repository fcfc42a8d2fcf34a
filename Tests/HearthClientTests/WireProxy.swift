import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP proxy on 127.0.0.1 between a client and a server, for tests that need to see or cut
/// the wire: it counts the bytes the server sends, and can cut every connection right after
/// the server received a request but before its answer reaches the client.
final class WireProxy: Sendable {
    private struct State {
        var bytesToClient = 0
        /// Request lines seen going to the server, by op (`"op":"subscribe"` → "subscribe").
        var ops: [String: Int] = [:]
        /// A request containing this text cuts the connection once the server has it.
        var cutMarker: String?
        var connections: [any Channel] = []
        /// The client channels being cut: the server's bytes to them are dropped. Per proxy, and
        /// forgotten once closed, since a later channel may reuse a closed one's identifier.
        var cutting: Set<ObjectIdentifier> = []
    }

    private let state = NIOLockedValueBox(State())
    private let listener: any Channel
    let port: Int

    private init(listener: any Channel, port: Int) {
        self.listener = listener
        self.port = port
    }

    /// Starts a proxy to `127.0.0.1:upstreamPort`.
    static func start(upstreamPort: Int) async throws -> WireProxy {
        let box = NIOLockedValueBox<WireProxy?>(nil)
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // The client may send before the connection to the server is up: nothing is read from
            // it until its Forwarder is in place, so no byte is dropped.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture {
                            try outbound.pipeline.syncOperations.addHandler(
                                Forwarder(partner: inbound, toClient: true, proxy: box.withLockedValue { $0 }))
                        }
                    }
                    .connect(host: "127.0.0.1", port: upstreamPort)
                    .flatMapThrowing { outbound in
                        box.withLockedValue { $0 }?.track(inbound)
                        try inbound.pipeline.syncOperations.addHandler(
                            Forwarder(partner: outbound, toClient: false, proxy: box.withLockedValue { $0 }))
                    }
                    .flatMap { inbound.setOption(.autoRead, value: true) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let proxy = WireProxy(listener: listener, port: listener.localAddress?.port ?? 0)
        box.withLockedValue { $0 = proxy }
        return proxy
    }

    var url: String { "hearth://127.0.0.1:\(port)" }

    /// The bytes the server has sent through the proxy since the last reset.
    var bytesToClient: Int { state.withLockedValue { $0.bytesToClient } }

    func resetCount() { state.withLockedValue { $0.bytesToClient = 0 } }

    /// How many requests with this op the client has sent through the proxy.
    func requests(_ op: String) -> Int { state.withLockedValue { $0.ops[op] ?? 0 } }

    fileprivate func sawRequests(_ text: String) {
        var found: [String] = []
        for line in text.split(separator: "\n") {
            guard let range = line.range(of: #""op":""#) else { continue }
            let rest = line[range.upperBound...]
            if let end = rest.firstIndex(of: "\"") { found.append(String(rest[..<end])) }
        }
        guard !found.isEmpty else { return }
        state.withLockedValue { state in
            for op in found { state.ops[op, default: 0] += 1 }
        }
    }

    /// The next request whose line contains `marker` reaches the server, and then every
    /// connection is cut before anything more (its answer included) reaches the client.
    func cut(afterRequestContaining marker: String) { state.withLockedValue { $0.cutMarker = marker } }

    /// Cuts every connection now.
    func cutAll() {
        let channels = state.withLockedValue { state -> [any Channel] in
            defer { state.connections = [] }
            return state.connections
        }
        for channel in channels { channel.close(promise: nil) }
    }

    func stop() async {
        cutAll()
        try? await listener.close()
    }

    fileprivate func track(_ channel: any Channel) {
        state.withLockedValue { $0.connections.append(channel) }
    }

    fileprivate func counted(_ bytes: Int) {
        state.withLockedValue { $0.bytesToClient += bytes }
    }

    /// Whether `line` arms the cut (once).
    fileprivate func armsCut(_ text: String) -> Bool {
        state.withLockedValue { state in
            guard let marker = state.cutMarker, text.contains(marker) else { return false }
            state.cutMarker = nil
            return true
        }
    }
}

/// Copies bytes to the partner channel; closing either side closes the other.
private final class Forwarder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private let partner: any Channel
    private let toClient: Bool
    private let proxy: WireProxy?

    init(partner: any Channel, toClient: Bool, proxy: WireProxy?) {
        self.partner = partner
        self.toClient = toClient
        self.proxy = proxy
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if toClient {
            guard !(proxy?.isCutting(partner) ?? false) else { return }
            proxy?.counted(buffer.readableBytes)
            partner.writeAndFlush(buffer, promise: nil)
            return
        }
        partner.writeAndFlush(buffer, promise: nil)
        let text = String(buffer: buffer)
        proxy?.sawRequests(text)
        if proxy?.armsCut(text) == true, let proxy {
            // Let the server read and apply the request, but the client must not see the answer.
            proxy.startCut(client: context.channel, server: partner)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension WireProxy {
    fileprivate func isCutting(_ client: any Channel) -> Bool {
        state.withLockedValue { $0.cutting.contains(ObjectIdentifier(client)) }
    }

    /// Drops the server's bytes to `client` from now on and closes both sides shortly after.
    fileprivate func startCut(client: any Channel, server: any Channel) {
        let id = ObjectIdentifier(client)
        _ = state.withLockedValue { $0.cutting.insert(id) }
        client.eventLoop.scheduleTask(in: .milliseconds(300)) {
            client.close(promise: nil)
            server.close(promise: nil)
        }
        client.closeFuture.whenComplete { _ in _ = self.state.withLockedValue { $0.cutting.remove(id) } }
    }
}
