import ArgumentParser
import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Trigger deliveries from a running hearthd to a receiver in this process: hearthd must run a
/// trigger on `/bench/trig/{n}` whose URL is `http://127.0.0.1:<receiver-port>/` (the script
/// writes that configuration). Two measures:
/// - `deliveries`: `--count` creates written pipelined, then the rate at which their events
///   arrive (first to last);
/// - `latency`: creates at `--rate` a second for `--duration` seconds, one at a time in a
///   schedule, and the time from each write's acknowledgement (read by its own thread) to its
///   event's arrival (HdrHistogram).
struct TriggersScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "triggers", abstract: "Trigger deliveries to a receiver in this process: rate, or latency.")

    enum Measure: String, ExpressibleByArgument {
        case deliveries, latency
    }

    @OptionGroup var server: ServerOptions
    @Option(help: "The port this process receives deliveries on (hearthd's trigger URL).") var receiverPort: Int
    @Option(help: "deliveries or latency.") var measure = Measure.deliveries
    @Option(help: "Writes for `deliveries`.") var count = 50_000
    @Option(help: "Writes per second for `latency`.") var rate = 1000
    @Option(help: "Seconds of writing for `latency`.") var duration: Double = 10

    func validate() throws {
        guard count > 0, rate > 0, rate <= 100_000, duration > 0, receiverPort > 0 else {
            throw ValidationError("--count, --rate (at most 100,000), --duration and --receiver-port must be positive")
        }
        guard server.target == .hearth else { throw ValidationError("triggers are hearth's") }
    }

    func run() throws {
        try server.checkLoopback()
        let receiver = try DeliveryReceiver.start(port: receiverPort)
        defer { receiver.stop() }
        guard var socket = try LineSocket.connect(host: server.host, port: server.port) else {
            throw ValidationError("nothing listens on port \(server.port)")
        }
        defer { socket.close() }
        _ = try socket.readLine()  // hello
        let run = "r\(monotonicNanoseconds() % 1_000_000_000)"
        switch measure {
        case .deliveries: try deliveries(socket: socket, receiver: receiver, run: run)
        case .latency: try latency(socket: &socket, receiver: receiver, run: run)
        }
    }

    private func deliveries(socket: LineSocket, receiver: DeliveryReceiver, run: String) throws {
        progress("triggers: \(count) creates, pipelined, then their deliveries; at most \(server.seconds) s")
        let started = monotonicNanoseconds()
        var window: [UInt8] = []
        for index in 0..<count {
            window += Array(#"{"op":"set","path":"/bench/trig/\#(run)-\#(index)","value":\#(index)}"#.utf8) + [0x0A]
            if window.count > 64 * 1024 || index == count - 1 {
                try socket.send(window)
                window.removeAll(keepingCapacity: true)
            }
        }
        try readAnswers(count, from: socket.fd)
        let written = monotonicNanoseconds()
        let deadline = server.deadline
        while receiver.count < count, monotonicNanoseconds() < deadline { usleep(10_000) }
        let (received, first, last) = receiver.span
        let seconds = Double(last - first) / 1e9
        report(
            scenario: "triggers-deliveries",
            [
                ("writes", .int(Int64(count))), ("delivered", .int(Int64(received))),
                ("writeSeconds", .double(Double(written - started) / 1e9)),
                ("deliverySeconds", .double(seconds)),
                ("deliveriesPerSecond", .double(seconds > 0 ? (Double(received - 1) / seconds).rounded() : 0)),
            ])
    }

    private func latency(socket: inout LineSocket, receiver: DeliveryReceiver, run: String) throws {
        let writes = Int(Double(rate) * duration)
        progress("triggers: \(writes) creates at \(rate)/s, ack-to-delivery latency; at most \(server.seconds) s")
        let acks = NIOLockedValueBox([UInt64](repeating: 0, count: writes))
        let reader = socket
        let thread = ThreadBox {
            var reader = reader
            for index in 0..<writes {
                guard (try? reader.readLine()) != nil else { return }
                let now = monotonicNanoseconds()
                acks.withLockedValue { $0[index] = now }
            }
        }
        thread.start()
        let interval = 1_000_000_000 / UInt64(rate)
        let start = monotonicNanoseconds() + 10_000_000
        for index in 0..<writes {
            let due = start + UInt64(index) * interval
            let now = monotonicNanoseconds()
            if due > now { usleep(useconds_t((due - now) / 1000)) }
            try socket.send(line: #"{"op":"set","path":"/bench/trig/\#(run)-\#(index)","value":\#(index)}"#)
        }
        let deadline = server.deadline
        while receiver.count < writes, monotonicNanoseconds() < deadline { usleep(10_000) }
        thread.join()
        var histogram = latencyHistogram()
        var early = 0
        let arrivals = receiver.arrivals(run: run, writes: writes)
        acks.withLockedValue { acks in
            for index in 0..<writes where acks[index] > 0 && arrivals[index] > 0 {
                if arrivals[index] >= acks[index] {
                    histogram.record(arrivals[index] - acks[index])
                } else {
                    early += 1
                    histogram.record(1)
                }
            }
        }
        report(
            scenario: "triggers-latency",
            [
                ("writes", .int(Int64(writes))), ("rate", .int(Int64(rate))),
                ("delivered", .int(Int64(histogram.totalCount))),
                // Events that reached the receiver before the writer read its acknowledgement.
                ("beforeAck", .int(Int64(early))),
            ] + latencyFields(histogram))
    }

    /// Reads until `count` answer lines came.
    private func readAnswers(_ count: Int, from fd: Int32) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var lines = 0
        while lines < count {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw LineSocket.Failure(description: "the server closed the connection") }
            for byte in buffer[0..<got] where byte == 0x0A { lines += 1 }
        }
    }
}

/// A thread for a blocking loop.
final class ThreadBox: @unchecked Sendable {
    private var thread = pthread_t()
    private let body: () -> Void

    init(_ body: @escaping () -> Void) { self.body = body }

    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &thread, nil,
            { pointer in
                guard let pointer else { return nil }
                let box = Unmanaged<ThreadBox>.fromOpaque(pointer).takeRetainedValue()
                box.body()
                return nil
            }, box)
    }

    func join() { pthread_join(thread, nil) }
}

/// An HTTP/1.1 receiver (connections kept alive) that answers 204 to every POST and records when each event arrived, by
/// the index at the end of its `Hearth-Event-Id` (`…/bench/trig/<run>-<index>`).
final class DeliveryReceiver: Sendable {
    private struct State {
        var count = 0
        var first: UInt64 = 0
        var last: UInt64 = 0
        var arrivals: [String: UInt64] = [:]
    }

    private let state: NIOLockedValueBox<State>
    private let channel: any Channel

    private init(state: NIOLockedValueBox<State>, channel: any Channel) {
        self.state = state
        self.channel = channel
    }

    static func start(port: Int) throws -> DeliveryReceiver {
        let state = NIOLockedValueBox(State())
        let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 1024)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        Handler(record: { id in Self.record(id, at: monotonicNanoseconds(), in: state) }))
                }
            }
            .bind(host: "127.0.0.1", port: port).wait()
        return DeliveryReceiver(state: state, channel: channel)
    }

    private static func record(_ id: String, at now: UInt64, in state: NIOLockedValueBox<State>) {
        state.withLockedValue { state in
            guard state.arrivals[id] == nil else { return }
            state.arrivals[id] = now
            state.count += 1
            if state.first == 0 { state.first = now }
            state.last = now
        }
    }

    var count: Int { state.withLockedValue { $0.count } }

    /// Events received, and when the first and the last came.
    var span: (Int, UInt64, UInt64) { state.withLockedValue { ($0.count, $0.first, $0.last) } }

    /// When the event of write `index` of `run` arrived (0: never), for each index.
    func arrivals(run: String, writes: Int) -> [UInt64] {
        state.withLockedValue { state in
            var result = [UInt64](repeating: 0, count: writes)
            for (id, at) in state.arrivals {
                guard let dash = id.lastIndex(of: "-"), let index = Int(id[id.index(after: dash)...]),
                    index < writes, id.contains("/\(run)-")
                else { continue }
                result[index] = at
            }
            return result
        }
    }

    func stop() { try? channel.close().wait() }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let record: (String) -> Void
        var id = ""

        init(record: @escaping (String) -> Void) { self.record = record }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                id = head.headers.first(name: "Hearth-Event-Id") ?? ""
            case .body:
                break
            case .end:
                record(id)
                // Kept alive, as receivers usually are.
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .noContent))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
