import Foundation
import HearthJSON
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A client of the Firebase Realtime Database wire protocol (version 5) over WebSocket, written
/// for the tests alone from the protocol's description, so that the tests hold the server's
/// `/.ws` endpoint to the protocol without sharing its code.
///
/// Every frame the server sends is kept in `receivedFrames`; messages are reassembled from
/// count-prefixed frames and queued in arrival order. `request` sends a data message with the next
/// `r` and returns its response together with the pushes that arrived before it, so tests can
/// assert the protocol's ordering rules (data before a listen's `ok`, a write's pushes before its
/// `ok`). Every wait is bounded by a timeout.
///
/// Frames that arrive in one burst with the 101 response and the end of the stream can be lost
/// (NIO's HTTP response decoder may still be in the pipeline when the stream ends); a test of a
/// server that answers the upgrade and closes at once reads raw bytes instead (`rawUpgrade`).
final class FirebaseWireClient: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A server push: `{"a":ACTION,"b":BODY}` inside a data envelope.
    struct Push: Sendable, Equatable, CustomStringConvertible {
        let action: String
        let body: JSONValue
        var path: String? { body["p"]?.stringValue }
        var data: JSONValue { body["d"] ?? .null }
        var tag: Int64? { body["t"]?.int64Value }
        var description: String { #"{"a":"\#(action)","b":\#(body.jsonString)}"# }
    }

    /// A response: `{"r":N,"b":{"s":STATUS,"d":DATA}}` inside a data envelope.
    struct Response: Sendable, Equatable, CustomStringConvertible {
        let r: Int64
        let status: String
        let data: JSONValue
        var description: String { #"{"r":\#(r),"b":{"s":"\#(status)","d":\#(data.jsonString)}}"# }
    }

    /// One message from the server, classified.
    enum Message: Sendable, Equatable, CustomStringConvertible {
        /// `{"t":"c","d":{"t":TYPE,"d":DATA}}`.
        case control(type: String, data: JSONValue)
        case response(Response)
        case push(Push)
        /// Valid JSON that is none of the above (a protocol violation a test reports).
        case other(JSONValue)
        /// Text that is not JSON.
        case unparsable(String)

        var description: String {
            switch self {
            case .control(let type, let data): return #"control {"t":"\#(type)","d":\#(data.jsonString)}"#
            case .response(let response): return "response \(response)"
            case .push(let push): return "push \(push)"
            case .other(let value): return "unexpected message \(value.jsonString)"
            case .unparsable(let text): return "unparsable message \(text.prefix(200))"
            }
        }
    }

    /// A response and the pushes the server sent between the previous response and it.
    struct Exchange: Sendable, CustomStringConvertible {
        let response: Response
        let pushesBefore: [Push]
        var status: String { response.status }
        var data: JSONValue { response.data }
        var description: String {
            (pushesBefore.map { "push \($0)" } + ["response \(response)"]).joined(separator: "\n")
        }
    }

    /// Sends at most this many UTF-8 bytes per frame; longer messages go as a count frame and pieces.
    static let maxFrameBytes = 16_384

    private let inbox: Inbox
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let nextRequest = NIOLockedValueBox<Int64>(1)
    /// The first control message: the server hello, `{"t":"h","d":{"ts","v","h","s"}}` (its `d`).
    let hello: JSONValue

    /// Connects to `ws[s]://host:port` + `target` (path and query), completes the WebSocket
    /// upgrade and, unless `readHello` is false, waits for the server hello (a control `h`).
    /// `hostHeader` defaults to `host:port`. With `tls`, the connection speaks TLS trusting the
    /// CA in `caFile` and checking the certificate for `serverHostname`.
    init(
        port: Int, host: String = "127.0.0.1", target: String = "/.ws?v=5", headers: [(String, String)] = [],
        hostHeader: String? = nil, tls: (caFile: String, serverHostname: String)? = nil, readHello: Bool = true,
        timeout: Double = 10
    ) async throws {
        let sslContext: NIOSSLContext? = try tls.map { tls in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(tls.caFile))
            return try NIOSSLContext(configuration: configuration)
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target)
        head.headers.add(name: "Host", value: hostHeader ?? "\(host):\(port)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        let inbox = Inbox()
        self.inbox = inbox
        let requestHead = head
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        let serverHostname = tls?.serverHostname
        let upgradeFuture = NIOLockedValueBox<EventLoopFuture<Bool>?>(nil)
        do {
            let connected = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(Int64(timeout)))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let sslContext {
                            try channel.pipeline.syncOperations.addHandler(
                                try NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                        }
                        let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(maxFrameSize: 1 << 24) { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(FrameCollector(inbox: inbox))
                                return true
                            }
                        }
                        var configuration = NIOUpgradableHTTPClientPipelineConfiguration(
                            upgradeConfiguration: NIOTypedHTTPClientUpgradeConfiguration(
                                upgradeRequestHead: requestHead, upgraders: [upgrader],
                                notUpgradingCompletionHandler: { channel in
                                    channel.eventLoop.makeCompletedFuture {
                                        try channel.pipeline.syncOperations.addHandler(RefusalCollector(inbox: inbox))
                                        return false
                                    }
                                }))
                        // The server's first frame may arrive with the 101 response.
                        configuration.leftOverBytesStrategy = .forwardBytes
                        let upgraded = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                            configuration: configuration)
                        upgradeFuture.withLockedValue { $0 = upgraded }
                    }
                }
                .connect(host: host, port: port)
                .get()
            channel = connected
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        do {
            guard let upgradeResult = upgradeFuture.withLockedValue({ $0 }) else {
                throw Failure(description: "the HTTP pipeline was not set up")
            }
            guard try await FirebaseWireClient.bounded(timeout, { try await upgradeResult.get() }) else {
                try? await Task.sleep(nanoseconds: 200_000_000)
                throw Failure(
                    description: "the server refused the WebSocket upgrade: \(inbox.refusal ?? "no response")")
            }
            if readHello {
                let first = try await FirebaseWireClient.nextMessage(from: inbox, timeout: timeout)
                guard case .control("h", let data) = first else {
                    throw Failure(description: "the first message was not the server hello but \(first)")
                }
                hello = data
            } else {
                hello = .null
            }
        } catch {
            try? await channel.close()
            try? await group.shutdownGracefully()
            throw error
        }
    }

    deinit {
        group.shutdownGracefully { _ in }
    }

    /// A future's value, or a failure after `timeout` seconds.
    private static func bounded<T: Sendable>(
        _ timeout: Double, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { tasks in
            tasks.addTask { try await work() }
            tasks.addTask {
                try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                throw Failure(description: "timed out after \(timeout) s waiting for the WebSocket upgrade")
            }
            defer { tasks.cancelAll() }
            guard let first = try await tasks.next() else { throw Failure(description: "no result") }
            return first
        }
    }

    // MARK: Sending

    /// Sends one text frame exactly as given (a count frame, a piece, a keepalive `0`, bad JSON...).
    func sendRawFrame(_ text: String) async throws {
        try await sendFrame(opcode: .text, bytes: Array(text.utf8))
    }

    /// Sends one binary frame.
    func sendBinaryFrame(_ bytes: [UInt8]) async throws {
        try await sendFrame(opcode: .binary, bytes: bytes)
    }

    /// Sends a WebSocket-level ping with `payload`.
    func sendWebSocketPing(_ payload: [UInt8]) async throws {
        try await sendFrame(opcode: .ping, bytes: payload)
    }

    private func sendFrame(opcode: WebSocketOpcode, bytes: [UInt8]) async throws {
        let frame = WebSocketFrame(
            fin: true, opcode: opcode, maskKey: .random(), data: channel.allocator.buffer(bytes: bytes))
        try await channel.writeAndFlush(frame).get()
    }

    /// The frames a message of `text` travels in: the text alone when it has at most
    /// `maxFrameBytes` UTF-8 bytes, else the decimal count of pieces followed by the pieces, each at
    /// most `maxFrameBytes` bytes and cut between Unicode scalars (for ASCII text this is the SDK's
    /// cut by UTF-16 units).
    static func frames(of text: String, maxFrameBytes: Int = maxFrameBytes) -> [String] {
        guard text.utf8.count > maxFrameBytes else { return [text] }
        var pieces: [String] = []
        var current = String.UnicodeScalarView()
        var currentBytes = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            if currentBytes + size > maxFrameBytes {
                pieces.append(String(current))
                current = String.UnicodeScalarView()
                currentBytes = 0
            }
            current.append(scalar)
            currentBytes += size
        }
        if !current.isEmpty { pieces.append(String(current)) }
        return ["\(pieces.count)"] + pieces
    }

    /// Sends one message, split as `frames(of:)` says.
    func send(text: String) async throws {
        for frame in Self.frames(of: text) { try await sendRawFrame(frame) }
    }

    /// Sends one JSON message (an envelope), split when long.
    func send(_ message: JSONValue) async throws {
        try await send(text: message.jsonString)
    }

    /// The next request number (`r`), counting from 1 as the JS SDK does.
    func takeRequestNumber() -> Int64 {
        nextRequest.withLockedValue { value in
            defer { value += 1 }
            return value
        }
    }

    /// Sends `{"t":"d","d":{"r":N,"a":ACTION,"b":BODY}}` without waiting; returns N.
    @discardableResult
    func sendRequest(_ action: String, _ body: JSONValue) async throws -> Int64 {
        let r = takeRequestNumber()
        let message: JSONValue = .object([
            "t": .string("d"),
            "d": .object(["r": .int(r), "a": .string(action), "b": body]),
        ])
        try await send(message)
        return r
    }

    /// Sends a request and waits for its response; the pushes that came before the response
    /// (and after the previous consumed message) are returned with it and kept in `pushLog`.
    func request(_ action: String, _ body: JSONValue, timeout: Double = 10) async throws -> Exchange {
        let r = try await sendRequest(action, body)
        return try await exchange(for: r, timeout: timeout)
    }

    /// `request` with the body written as JSON text.
    func request(_ action: String, _ body: String, timeout: Double = 10) async throws -> Exchange {
        try await request(action, json(body), timeout: timeout)
    }

    /// Sends a control message `{"t":"c","d":{"t":TYPE,"d":DATA}}`.
    func sendControl(_ type: String, _ data: JSONValue = .object([])) async throws {
        try await send(.object(["t": .string("c"), "d": .object(["t": .string(type), "d": data])]))
    }

    // MARK: Receiving

    /// Waits for the response to request `r`, returning it with the pushes consumed on the way.
    /// Responses to other requests met on the way are set aside for `response(for:)`; control
    /// messages go to `controlLog`.
    func exchange(for r: Int64, timeout: Double = 10) async throws -> Exchange {
        if let early = inbox.takeSetAside(r) { return Exchange(response: early.response, pushesBefore: early.pushes) }
        let deadline = Date().addingTimeInterval(timeout)
        var pushes: [Push] = []
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                throw Failure(
                    description: "timed out waiting for the response to r=\(r); pushes meanwhile: \(pushes)")
            }
            let message = try await nextMessage(timeout: remaining)
            switch message {
            case .response(let response) where response.r == r:
                return Exchange(response: response, pushesBefore: pushes)
            case .response(let response):
                inbox.setAside(response, pushes: pushes)
                pushes = []
            case .push(let push):
                pushes.append(push)
            case .control:
                break
            case .other, .unparsable:
                throw Failure(description: "while waiting for r=\(r) the server sent \(message)")
            }
        }
    }

    /// The response to `r` (see `exchange(for:)`).
    func response(for r: Int64, timeout: Double = 10) async throws -> Response {
        try await exchange(for: r, timeout: timeout).response
    }

    /// The next message in arrival order, whatever it is. Pushes and controls are also recorded
    /// in `pushLog` and `controlLog`.
    func nextMessage(timeout: Double = 10) async throws -> Message {
        try await Self.nextMessage(from: inbox, timeout: timeout)
    }

    private static func nextMessage(from inbox: Inbox, timeout: Double) async throws -> Message {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            switch inbox.take() {
            case .message(let message): return message
            case .closed(let why):
                throw Failure(description: "the connection closed (\(why)) while waiting for a message")
            case .empty: break
            }
            guard deadline.timeIntervalSinceNow > 0 else {
                throw Failure(description: "timed out after \(timeout) s waiting for a message")
            }
            try await Task.sleep(nanoseconds: 2_000_000)
        }
    }

    /// The next push; responses met on the way are set aside, controls logged.
    func nextPush(timeout: Double = 10) async throws -> Push {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "timed out after \(timeout) s waiting for a push") }
            let message = try await nextMessage(timeout: remaining)
            switch message {
            case .push(let push): return push
            case .response(let response): inbox.setAside(response, pushes: [])
            case .control: break
            case .other, .unparsable: throw Failure(description: "while waiting for a push the server sent \(message)")
            }
        }
    }

    /// The next control message; anything else met first is a failure.
    func nextControl(timeout: Double = 10) async throws -> (type: String, data: JSONValue) {
        let message = try await nextMessage(timeout: timeout)
        guard case .control(let type, let data) = message else {
            throw Failure(description: "expected a control message, the server sent \(message)")
        }
        return (type, data)
    }

    /// Every message that arrives within `seconds` (the connection may close meanwhile).
    func messages(within seconds: Double) async throws -> [Message] {
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        var messages: [Message] = []
        while case .message(let message) = inbox.take() { messages.append(message) }
        return messages
    }

    /// Every push received so far, consumed or not, in arrival order.
    var pushLog: [Push] { inbox.pushLog }

    /// Every control message received so far, in arrival order.
    var controlLog: [(type: String, data: JSONValue)] { inbox.controlLog }

    /// Every text frame the server sent, as sent (count frames and pieces included).
    var receivedFrames: [String] { inbox.frames }

    /// The payloads of the WebSocket pongs received so far.
    var webSocketPongs: [[UInt8]] { inbox.pongs }

    /// True once the server closed the connection (or the socket ended).
    var isClosed: Bool { inbox.isClosed }

    /// The close code and reason of the server's close frame, if it sent one.
    var closeFrame: (code: Int, reason: String)? { inbox.closeFrame }

    /// Waits until the connection ends; false after `timeout`.
    func waitForClose(timeout: Double = 10) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            if inbox.isClosed { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return inbox.isClosed
    }

    /// Stops reading from the socket (the server's output then backs up), or starts again.
    func setReading(_ on: Bool) async throws {
        try await channel.setOption(ChannelOptions.autoRead, value: on).get()
        if on { channel.read() }
    }

    /// Closes with a WebSocket close frame (code 1000), then the socket.
    func close() async {
        var payload = channel.allocator.buffer(capacity: 2)
        payload.write(webSocketErrorCode: .normalClosure)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload)
        try? await channel.writeAndFlush(frame).get()
        _ = await waitForClose(timeout: 2)
        try? await channel.close()
        _ = await waitForClose(timeout: 2)
    }

    /// Closes the socket without a close frame.
    func closeAbruptly() async {
        try? await channel.close()
    }
}

/// What the channel handlers hand to the client: frames, reassembled messages, the close.
private final class Inbox: Sendable {
    enum Taken {
        case message(FirebaseWireClient.Message)
        case closed(String)
        case empty
    }

    private struct State {
        var frames: [String] = []
        var queue: [FirebaseWireClient.Message] = []
        var collecting: (remaining: Int, text: String)?
        var pushLog: [FirebaseWireClient.Push] = []
        var controlLog: [(type: String, data: JSONValue)] = []
        var setAside: [Int64: (response: FirebaseWireClient.Response, pushes: [FirebaseWireClient.Push])] = [:]
        var closed: String?
        var closeFrame: (code: Int, reason: String)?
        var refusal: String?
        var fragment: [UInt8]?
        var pongs: [[UInt8]] = []
    }

    private let state = NIOLockedValueBox(State())

    /// One text frame from the server, read with the protocol's rule: outside a multi-frame
    /// message, a frame of at most 6 characters that is a number N announces N frames.
    func received(frame text: String) {
        state.withLockedValue { s in
            s.frames.append(text)
            if var collecting = s.collecting {
                collecting.text += text
                collecting.remaining -= 1
                if collecting.remaining == 0 {
                    s.collecting = nil
                    Self.deliver(collecting.text, into: &s)
                } else {
                    s.collecting = collecting
                }
                return
            }
            if text.count <= 6, let count = Int(text) {
                // A server must never send 0 (the client would wait for nothing); recorded as unparsable.
                if count <= 0 {
                    s.queue.append(.unparsable("frame count \(text)"))
                } else {
                    s.collecting = (count, "")
                }
                return
            }
            Self.deliver(text, into: &s)
        }
    }

    private static func deliver(_ text: String, into s: inout State) {
        let message = classify(text)
        switch message {
        case .push(let push): s.pushLog.append(push)
        case .control(let type, let data): s.controlLog.append((type, data))
        default: break
        }
        s.queue.append(message)
    }

    private static func classify(_ text: String) -> FirebaseWireClient.Message {
        guard let value = try? JSONParser.parse(Array(text.utf8)) else { return .unparsable(text) }
        guard let envelopeType = value["t"]?.stringValue, let payload = value["d"] else { return .other(value) }
        switch envelopeType {
        case "c":
            guard let type = payload["t"]?.stringValue else { return .other(value) }
            return .control(type: type, data: payload["d"] ?? .null)
        case "d":
            if let r = payload["r"]?.int64Value {
                guard let body = payload["b"], let status = body["s"]?.stringValue else { return .other(value) }
                return .response(.init(r: r, status: status, data: body["d"] ?? .null))
            }
            guard let action = payload["a"]?.stringValue, let body = payload["b"] else { return .other(value) }
            return .push(.init(action: action, body: body))
        default:
            return .other(value)
        }
    }

    /// A text or continuation frame's bytes; whole messages go to `received(frame:)`.
    func receivedPart(_ bytes: [UInt8], first: Bool, fin: Bool) {
        let whole: [UInt8]? = state.withLockedValue { s in
            if first { s.fragment = [] }
            s.fragment?.append(contentsOf: bytes)
            guard fin, let all = s.fragment else { return nil }
            s.fragment = nil
            return all
        }
        if let whole { received(frame: String(decoding: whole, as: UTF8.self)) }
    }

    func receivedPong(_ payload: [UInt8]) {
        state.withLockedValue { $0.pongs.append(payload) }
    }

    func receivedClose(code: Int, reason: String) {
        state.withLockedValue { $0.closeFrame = (code, reason) }
    }

    func ended(_ why: String) {
        state.withLockedValue { s in
            if s.closed == nil { s.closed = why }
        }
    }

    func refused(_ text: String) {
        state.withLockedValue { s in s.refusal = (s.refusal ?? "") + text }
    }

    func take() -> Taken {
        state.withLockedValue { s in
            if !s.queue.isEmpty { return .message(s.queue.removeFirst()) }
            if let closed = s.closed { return .closed(closed) }
            return .empty
        }
    }

    func setAside(_ response: FirebaseWireClient.Response, pushes: [FirebaseWireClient.Push]) {
        state.withLockedValue { $0.setAside[response.r] = (response, pushes) }
    }

    func takeSetAside(_ r: Int64) -> (response: FirebaseWireClient.Response, pushes: [FirebaseWireClient.Push])? {
        state.withLockedValue { $0.setAside.removeValue(forKey: r) }
    }

    var pushLog: [FirebaseWireClient.Push] { state.withLockedValue { $0.pushLog } }
    var controlLog: [(type: String, data: JSONValue)] { state.withLockedValue { $0.controlLog } }
    var frames: [String] { state.withLockedValue { $0.frames } }
    var isClosed: Bool { state.withLockedValue { $0.closed != nil } }
    var closeFrame: (code: Int, reason: String)? { state.withLockedValue { $0.closeFrame } }
    var refusal: String? { state.withLockedValue { $0.refusal } }
    var pongs: [[UInt8]] { state.withLockedValue { $0.pongs } }
}

/// Reads WebSocket frames after the upgrade: text into the inbox, pings answered, the close kept.
private final class FrameCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    private let inbox: Inbox

    init(inbox: Inbox) { self.inbox = inbox }

    /// The socket may have ended while the upgrade was still under way; the bytes that came
    /// with the 101 response are forwarded later in this same turn of the event loop, so the end
    /// is recorded after them.
    func handlerAdded(context: ChannelHandlerContext) {
        guard !context.channel.isActive else { return }
        let inbox = self.inbox
        context.eventLoop.execute { inbox.ended("socket closed during the upgrade") }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        var payload = frame.unmaskedData
        let bytes = payload.readBytes(length: payload.readableBytes) ?? []
        switch frame.opcode {
        case .text:
            inbox.receivedPart(bytes, first: true, fin: frame.fin)
        case .continuation:
            inbox.receivedPart(bytes, first: false, fin: frame.fin)
        case .binary:
            inbox.received(frame: "<binary frame of \(bytes.count) bytes>")
        case .ping:
            let pong = WebSocketFrame(
                fin: true, opcode: .pong, maskKey: .random(), data: context.channel.allocator.buffer(bytes: bytes))
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            inbox.receivedPong(bytes)
        case .connectionClose:
            var closePayload = frame.unmaskedData
            let code = closePayload.readInteger(as: UInt16.self).map(Int.init) ?? 1005
            let reason = closePayload.readString(length: closePayload.readableBytes) ?? ""
            inbox.receivedClose(code: code, reason: reason)
            inbox.ended("close frame \(code) \(reason)")
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbox.ended("socket closed")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        inbox.ended("error: \(error)")
        context.close(promise: nil)
    }
}

/// Keeps the HTTP response of a refused upgrade, for the error message.
private final class RefusalCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private let inbox: Inbox

    init(inbox: Inbox) { self.inbox = inbox }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): inbox.refused("HTTP \(head.status.code) ")
        case .body(var body): inbox.refused(body.readString(length: body.readableBytes) ?? "")
        case .end: context.close(promise: nil)
        }
    }
}
