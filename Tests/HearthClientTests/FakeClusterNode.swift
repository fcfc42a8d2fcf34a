import HearthJSON
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A scripted cluster node on 127.0.0.1 speaking just enough of the line protocol for the
/// client's side of replication (the real cluster's tests come with the server): its hello
/// carries a `cluster` object, it can announce `cluster` events, refuses the first writes with
/// a chosen `unavailable` message, and answers `clusterStatus` and `failover` as scripted. It
/// records every request of every connection, and answers `use` as scripted.
final class FakeClusterNode: Sendable {
    struct State {
        var cluster: JSONValue
        /// The next this many writes are answered `unavailable` with `refusal`.
        var refusals = 0
        var refusal = "no leader"
        /// The `wid` of every write received, in order.
        var writeIDs: [String] = []
        var rev: Int64 = 0
        var clusterStatus: JSONValue = .null
        var failover: JSONValue = .null
        /// The `to` of each failover request (`null` without one).
        var failoverTargets: [JSONValue] = []
        var connections: [any Channel] = []
        /// Every request received, by connection (in the order they opened), in order.
        var requests: [[JSONValue]] = []
        /// The error object (`{"code":…,"message":…}`) every `use` is answered with; nil accepts it.
        var useRefusal: JSONValue?
    }

    let state: NIOLockedValueBox<State>
    private let listener: any Channel
    let port: Int

    private init(state: NIOLockedValueBox<State>, listener: any Channel, port: Int) {
        self.state = state
        self.listener = listener
        self.port = port
    }

    static func start(cluster: JSONValue) async throws -> FakeClusterNode {
        let state = NIOLockedValueBox(State(cluster: cluster))
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return FakeClusterNode(state: state, listener: listener, port: listener.localAddress?.port ?? 0)
    }

    var address: String { "127.0.0.1:\(port)" }

    /// Changes the cluster object and sends `{"event":"cluster",…}` on every connection.
    func announce(_ cluster: JSONValue) {
        let connections = state.withLockedValue { state in
            state.cluster = cluster
            return state.connections
        }
        let line = JSONValue.object([JSONMember("event", .string("cluster")), JSONMember("cluster", cluster)])
        for channel in connections { Handler.send(line, on: channel) }
    }

    /// The ops of every request received, by connection.
    var opsByConnection: [[String]] {
        state.withLockedValue { $0.requests.map { $0.map { $0["op"]?.stringValue ?? "?" } } }
    }

    /// Closes every connection from the server's side (the listener stays).
    func dropConnections() async {
        let connections = state.withLockedValue { $0.connections }
        for channel in connections { try? await channel.close() }
    }

    func stop() async {
        let connections = state.withLockedValue { $0.connections }
        for channel in connections { try? await channel.close() }
        try? await listener.close()
    }

    private final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let state: NIOLockedValueBox<State>
        private let pending = NIOLockedValueBox<[UInt8]>([])
        /// This connection's index in `State.requests`.
        private let connection = NIOLockedValueBox(0)

        init(state: NIOLockedValueBox<State>) { self.state = state }

        static func send(_ json: JSONValue, on channel: any Channel) {
            var bytes = json.serialized
            bytes.append(UInt8(ascii: "\n"))
            channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil)
        }

        func channelActive(context: ChannelHandlerContext) {
            let (cluster, index) = state.withLockedValue { state in
                state.connections.append(context.channel)
                state.requests.append([])
                return (state.cluster, state.requests.count - 1)
            }
            connection.withLockedValue { $0 = index }
            Self.send(
                .object([
                    JSONMember("event", .string("hello")), JSONMember("protocol", .int(1)),
                    JSONMember("server", .string("fake/0")), JSONMember("serverTime", .int(0)),
                    JSONMember("connection", .string("1")), JSONMember("cluster", cluster),
                ]), on: context.channel)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            let lines = pending.withLockedValue { pending -> [[UInt8]] in
                pending += bytes
                var lines: [[UInt8]] = []
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(Array(pending[..<newline]))
                    pending.removeSubrange(...newline)
                }
                return lines
            }
            for line in lines {
                guard let request = try? JSONParser.parse(line) else { continue }
                let index = connection.withLockedValue { $0 }
                state.withLockedValue { $0.requests[index].append(request) }
                Self.send(answer(request), on: context.channel)
            }
        }

        private func answer(_ request: JSONValue) -> JSONValue {
            let id = request["id"] ?? .null
            let op = request["op"]?.stringValue ?? ""
            return state.withLockedValue { state in
                func ok(_ members: [JSONMember] = []) -> JSONValue {
                    .object([JSONMember("id", id), JSONMember("ok", .bool(true))] + members)
                }
                switch op {
                case "use":
                    guard let refusal = state.useRefusal else { return ok([JSONMember("db", request["db"] ?? .null)]) }
                    return .object([JSONMember("id", id), JSONMember("ok", .bool(false)), JSONMember("error", refusal)])
                case "set", "update", "remove", "push", "setPriority", "transaction":
                    state.writeIDs.append(request["wid"]?.stringValue ?? "")
                    if state.refusals > 0 {
                        state.refusals -= 1
                        return .object([
                            JSONMember("id", id), JSONMember("ok", .bool(false)),
                            JSONMember(
                                "error",
                                .object([
                                    JSONMember("code", .string("unavailable")),
                                    JSONMember("message", .string(state.refusal)),
                                ])),
                        ])
                    }
                    state.rev += 1
                    return ok([JSONMember("rev", .int(state.rev))])
                case "clusterStatus":
                    return state.clusterStatus == .null
                        ? ok([JSONMember("cluster", state.cluster), JSONMember("members", .array([]))])
                        : .object([JSONMember("id", id)] + (state.clusterStatus.objectMembers ?? []))
                case "failover":
                    state.failoverTargets.append(request["to"] ?? .null)
                    return .object([JSONMember("id", id)] + (state.failover.objectMembers ?? []))
                default:
                    return ok()
                }
            }
        }
    }
}
