import HearthJSON
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A small HTTP/1.1 client for etcd's v3 JSON gateway: `POST` with a JSON body, one keep-alive
/// connection kept per endpoint, a request timeout, and the next endpoint tried when one refuses
/// connections. The endpoint that last answered is tried first.
final class EtcdHTTPClient: Sendable {
    let endpoints: [EtcdEndpoint]
    private let group: any EventLoopGroup
    private let requestTimeout: TimeAmount
    private let connectTimeout: TimeAmount
    private let state = Mutex(State())

    private struct State {
        /// Idle keep-alive connections by endpoint index.
        var idle: [Int: [any Channel]] = [:]
        /// The endpoint that answered last.
        var preferred = 0
        var closed = false
    }

    init(endpoints: [EtcdEndpoint], group: any EventLoopGroup, requestTimeout: TimeAmount, connectTimeout: TimeAmount) {
        self.endpoints = endpoints
        self.group = group
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
    }

    /// Posts `body` to `path` and returns the answer's body; a status other than 200 is thrown as
    /// `ClusterStoreError.rejected` with etcd's message.
    func post(_ path: String, _ body: JSONValue) async throws -> JSONValue {
        let bytes = body.serialized
        let start = state.withLock { $0.preferred }
        var lastFailure = "no endpoint configured"
        for offset in 0..<endpoints.count {
            let index = (start + offset) % endpoints.count
            let endpoint = endpoints[index]
            if let channel = takeIdle(index) {
                do {
                    return try await send(bytes, path: path, on: channel, index: index)
                } catch ClusterStoreError.connectionLost {
                    // The server closed an idle keep-alive connection: a new one follows.
                }
            }
            let channel: any Channel
            do {
                channel = try await connect(endpoint)
            } catch {
                lastFailure = "\(endpoint): \(error)"
                continue
            }
            state.withLock { $0.preferred = index }
            return try await send(bytes, path: path, on: channel, index: index)
        }
        throw ClusterStoreError.unreachable(endpoints: endpoints.map(\.description), reason: lastFailure)
    }

    /// Posts `body` to `path` on a connection of its own and streams the answer's body (a watch).
    /// Ending the stream's consumption closes the connection.
    func stream(
        _ path: String, _ body: JSONValue
    ) async throws -> (
        endpoint: EtcdEndpoint, body: AsyncThrowingStream<[UInt8], any Error>
    ) {
        let start = state.withLock { $0.preferred }
        var lastFailure = "no endpoint configured"
        for offset in 0..<endpoints.count {
            let endpoint = endpoints[(start + offset) % endpoints.count]
            let channel: any Channel
            do {
                channel = try await connect(endpoint)
            } catch {
                lastFailure = "\(endpoint): \(error)"
                continue
            }
            let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
            continuation.onTermination = { _ in channel.close(promise: nil) }
            let request = EtcdHTTPRequest(
                path: path, body: body.serialized, hostHeader: endpoint.hostHeader, timeout: requestTimeout,
                response: .stream(continuation))
            channel.writeAndFlush(request).whenFailure { continuation.finish(throwing: $0) }
            return (endpoint, stream)
        }
        throw ClusterStoreError.unreachable(endpoints: endpoints.map(\.description), reason: lastFailure)
    }

    /// Closes every idle connection; later requests fail.
    func shutdown() {
        let channels = state.withLock { state -> [any Channel] in
            state.closed = true
            defer { state.idle = [:] }
            return state.idle.values.flatMap { $0 }
        }
        for channel in channels { channel.close(promise: nil) }
    }

    private func send(_ bytes: [UInt8], path: String, on channel: any Channel, index: Int) async throws -> JSONValue {
        let endpoint = endpoints[index]
        let promise = channel.eventLoop.makePromise(of: EtcdHTTPResponse.self)
        let request = EtcdHTTPRequest(
            path: path, body: bytes, hostHeader: endpoint.hostHeader, timeout: requestTimeout, response: .whole(promise)
        )
        channel.writeAndFlush(request).whenFailure { promise.fail($0) }
        let response: EtcdHTTPResponse
        do {
            response = try await promise.futureResult.get()
        } catch EtcdHTTPFailure.timeout {
            channel.close(promise: nil)
            throw ClusterStoreError.timeout(endpoint: endpoint.description, path: path)
        } catch {
            channel.close(promise: nil)
            throw ClusterStoreError.connectionLost(endpoint: endpoint.description, path: path)
        }
        if response.keepAlive && channel.isActive {
            putIdle(channel, index)
        } else {
            channel.close(promise: nil)
        }
        return try Self.decode(response.status, response.body, endpoint: endpoint)
    }

    /// The JSON of a gateway answer, or the error it reports.
    static func decode(_ status: Int, _ body: [UInt8], endpoint: EtcdEndpoint) throws -> JSONValue {
        let json = try? JSONParser.parse(body)
        guard status == 200 else {
            let message =
                json?["message"]?.stringValue ?? json?["error"]?.stringValue
                ?? String(decoding: body.prefix(200), as: UTF8.self)
            throw ClusterStoreError.rejected(endpoint: endpoint.description, status: status, message: message)
        }
        guard let json else {
            throw ClusterStoreError.invalidResponse(endpoint: endpoint.description, detail: "the body is not JSON")
        }
        return json
    }

    private func connect(_ endpoint: EtcdEndpoint) async throws -> any Channel {
        if state.withLock({ $0.closed }) {
            throw ClusterStoreError.unreachable(endpoints: [endpoint.description], reason: "the client was shut down")
        }
        return try await ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(EtcdClientHandler())
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .get()
    }

    private func takeIdle(_ index: Int) -> (any Channel)? {
        state.withLock { state in
            while var channels = state.idle[index], let channel = channels.popLast() {
                state.idle[index] = channels
                if channel.isActive { return channel }
            }
            return nil
        }
    }

    private func putIdle(_ channel: any Channel, _ index: Int) {
        let keep = state.withLock { state -> Bool in
            guard !state.closed, state.idle[index, default: []].count < 4 else { return false }
            state.idle[index, default: []].append(channel)
            return true
        }
        if !keep { channel.close(promise: nil) }
    }
}
