import HearthProtocol
import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// What a server sent, in the load generator's terms.
enum BenchInbound {
    /// A request was answered.
    case success
    /// A request was answered with an error.
    case failure(String)
    /// An event of a subscription (Hearth: the event line; Redis: a pub/sub message's payload).
    case event(ByteBuffer)
}

struct BenchRequestFailed: Error, CustomStringConvertible {
    var description: String
}

/// A load-generating connection to Hearth or Redis: sends requests, completes one future per batch
/// of requests once all of them are answered (in order), and counts events, optionally recording
/// the latency of each from the timestamp it carries. Built on SwiftNIO so that one process can
/// drive thousands of connections from two threads.
final class BenchConnection: Sendable {
    let target: Target
    let channel: any Channel
    private let handler: NIOLoopBound<BenchHandler>

    private init(target: Target, channel: any Channel, handler: NIOLoopBound<BenchHandler>) {
        self.target = target
        self.channel = channel
        self.handler = handler
    }

    /// Connects; over TLS when `tls` is given, and authenticated with `token` when given.
    static func connect(
        target: Target, host: String, port: Int, group: any EventLoopGroup, tls: NIOSSLContext? = nil,
        token: String? = nil
    ) async throws -> BenchConnection {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: nil)) }
                    switch target {
                    case .hearth:
                        try pipeline.addHandler(LineFrameDecoder(maxLength: 1 << 30))
                        try pipeline.addHandler(HearthLineClassifier())
                    case .redis:
                        try pipeline.addHandler(ByteToMessageHandler(RESPDecoder()))
                        try pipeline.addHandler(RESPClassifier())
                    case .http:
                        try pipeline.addHandler(ByteToMessageHandler(HTTPResponseSplitter()))
                    }
                    try pipeline.addHandler(BenchHandler(target: target))
                }
            }
            .connect(host: host, port: port).get()
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(
                try channel.pipeline.syncOperations.handler(type: BenchHandler.self), eventLoop: channel.eventLoop)
        }.get()
        let connection = BenchConnection(target: target, channel: channel, handler: handler)
        if let token, target != .http { try await connection.request(.auth(token: token)).get() }
        return connection
    }

    /// Sends one request; the future completes with its answer.
    func request(_ request: BenchRequest) -> EventLoopFuture<Void> {
        send([request])
    }

    /// Sends requests in one write without waiting in between; the future completes when all are
    /// answered, and fails if any was answered with an error.
    func send(_ requests: [BenchRequest]) -> EventLoopFuture<Void> {
        let handler = self.handler
        let channel = self.channel
        let target = self.target
        guard !requests.isEmpty else { return channel.eventLoop.makeSucceededVoidFuture() }
        return channel.eventLoop.flatSubmit {
            // A request sent after channelInactive would wait for an answer forever (a server
            // at its connection limit may accept, answer with an error and close at once).
            guard channel.isActive else { return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
            var buffer = channel.allocator.buffer(capacity: requests.count * 64)
            for request in requests { target.encode(request, into: &buffer) }
            let promise = channel.eventLoop.makePromise(of: Void.self)
            handler.value.pending.append(BenchHandler.Waiter(remaining: requests.count, promise: promise))
            channel.writeAndFlush(buffer, promise: nil)
            return promise.futureResult
        }
    }

    /// Event lines or messages received so far.
    var eventCount: Int {
        get async throws { try await channel.eventLoop.submit { self.handler.value.events }.get() }
    }

    /// From now on, records the latency of every event whose timestamp is at or after `since`.
    func recordLatencies(since: UInt64) async throws {
        try await channel.eventLoop.submit {
            self.handler.value.latencies = latencyHistogram()
            self.handler.value.latencyFloor = since
        }.get()
    }

    /// The latencies recorded so far, in nanoseconds.
    var latencies: Histogram<UInt64>? {
        get async throws { try await channel.eventLoop.submit { self.handler.value.latencies }.get() }
    }

    var isActive: Bool { channel.isActive }

    func close() async {
        try? await channel.close()
    }
}

/// Matches answers to waiting batches, in order, and counts events.
final class BenchHandler: ChannelInboundHandler {
    typealias InboundIn = BenchInbound

    struct Waiter {
        var remaining: Int
        let promise: EventLoopPromise<Void>
        var failure: String?
    }

    let target: Target
    var pending = CircularBuffer<Waiter>()
    var events = 0
    var latencies: Histogram<UInt64>?
    var latencyFloor: UInt64 = 0

    init(target: Target) { self.target = target }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .success:
            answered(failure: nil)
        case .failure(let message):
            answered(failure: message)
        case .event(let event):
            events += 1
            if latencies != nil, let sent = target.timestamp(inEvent: event), sent >= latencyFloor {
                _ = latencies?.record(monotonicNanoseconds() &- sent)
            }
        }
    }

    private func answered(failure: String?) {
        guard !pending.isEmpty else { return }
        let first = pending.startIndex
        pending[first].remaining -= 1
        if pending[first].failure == nil { pending[first].failure = failure }
        guard pending[first].remaining <= 0 else { return }
        let waiter = pending.removeFirst()
        if let failure = waiter.failure {
            waiter.promise.fail(BenchRequestFailed(description: failure))
        } else {
            waiter.promise.succeed(())
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        while let waiter = pending.popFirst() { waiter.promise.fail(ChannelError.ioOnClosedChannel) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
