import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A replica's peer connection to its leader (docs/cluster.md, "Replication stream"): authenticates with the
/// cluster secret, asks to `replicate` from its position, then carries the leader's records to
/// the engine, and the replica's acknowledgements and forwarded requests to the leader.
///
/// `send` may be called from any thread. Messages reach `deliver` on the link's event loop, in
/// order, a read burst at a time.
final class ReplicaLink: LeaderLink {
    /// Tells this link's messages apart from those of an earlier link.
    let id: UInt64
    let leader: String
    private let channel: NIOLockedValueBox<(any Channel)?> = NIOLockedValueBox(nil)
    private let pending = NIOLockedValueBox<[[UInt8]]>([])

    /// A link not connected yet (`connect` connects it; tests feed its handler directly).
    init(id: UInt64, leader: String) {
        self.id = id
        self.leader = leader
    }

    /// Connects to `leader` (`host:port`) and starts replicating. `deliver` hears every message,
    /// `.closed` last (also when the connection could not be made).
    static func connect(
        id: UInt64, leader: String, secret: String?, node: String, fromRev: UInt64, history: EpochHistory,
        firstLines: [[UInt8]] = [], tls: NIOSSLContext?, group: any EventLoopGroup, maxLineBytes: Int, logger: Logger,
        deliver: @escaping @Sendable (ReplicaLink, [LinkMessage]) -> Void
    ) -> ReplicaLink {
        let link = ReplicaLink(id: id, leader: leader)
        guard let (host, port) = splitAddress(leader) else {
            logger.error("the leader's advertised address is not host:port", metadata: ["leader": "\(leader)"])
            group.next().execute { deliver(link, [.closed]) }
            return link
        }
        var hello: [UInt8] = []
        if let secret {
            JSONValue.object([
                JSONMember("op", .string("auth")), JSONMember("id", .string("auth")),
                JSONMember("token", .string(secret)),
            ])
            .serialize(into: &hello)
            hello.append(UInt8(ascii: "\n"))
        }
        var replicate = [
            JSONMember("op", .string("replicate")), JSONMember("id", .string("replicate")),
            JSONMember("node", .string(node)), JSONMember("fromRev", .int(Int64(clamping: fromRev))),
            JSONMember("history", history.json),
        ]
        if let origin = history.origin { replicate.append(JSONMember("origin", .string(origin))) }
        JSONValue.object(replicate).serialize(into: &hello)
        hello.append(UInt8(ascii: "\n"))
        for line in firstLines { hello += line }
        let first = hello
        ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        // An IP address is verified against the certificate's IP addresses.
                        let name = host.first?.isNumber == true || host.contains(":") ? nil : host
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: name))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        LinkHandler(link: link, maxLineBytes: maxLineBytes, logger: logger, deliver: deliver))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    let queued = link.pending.withLockedValue { queued -> [[UInt8]] in
                        defer { queued = [] }
                        return queued
                    }
                    link.channel.withLockedValue { $0 = channel }
                    var buffer = channel.allocator.buffer(bytes: first)
                    for line in queued { buffer.writeBytes(line) }
                    channel.writeAndFlush(buffer, promise: nil)
                case .failure(let error):
                    logger.warning(
                        "could not connect to the leader", metadata: ["leader": "\(leader)", "error": "\(error)"])
                    group.next().execute { deliver(link, [.closed]) }
                }
            }
        return link
    }

    /// Sends one line (with its newline) to the leader.
    func send(_ line: [UInt8]) {
        let channel = self.channel.withLockedValue { channel -> (any Channel)? in
            if channel == nil { pending.withLockedValue { $0.append(line) } }
            return channel
        }
        guard let channel else { return }
        channel.writeAndFlush(channel.allocator.buffer(bytes: line), promise: nil)
    }

    /// Closes the connection (the link then delivers `.closed`).
    func close() {
        channel.withLockedValue { $0 }?.close(promise: nil)
    }

    /// `host:port` (`[v6]:port` too) split in two.
    static func splitAddress(_ address: String) -> (String, Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

/// Frames and parses the leader's lines for a `ReplicaLink`. It frames its own input (as the
/// server's connections do) rather than behind a `LineFrameDecoder`: a frame passed down the
/// pipeline costs a dynamic cast out of `NIOAny` and a pipeline hop per record.
final class LinkHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let link: ReplicaLink
    @exclusivity(unchecked) private var framer: LineFramer
    private let logger: Logger
    private let deliver: @Sendable (ReplicaLink, [LinkMessage]) -> Void
    // The state every line touches is unchecked for exclusivity (a dynamic check per access
    // otherwise): only the link's event loop touches it, and nothing it calls reaches it.
    /// Messages read since the last submission: handed to the engine together at the end of a
    /// read, or once there are `Submission.burstSlice` of them, rather than one per line.
    @exclusivity(unchecked) private var pending: [LinkMessage] = []
    /// The records read since the last message in `pending` (they follow it).
    @exclusivity(unchecked) private var run = LinkRecords()
    /// The JSON parser's stacks, reused from one record to the next.
    @exclusivity(unchecked) private var parseWorkspace = JSONParseWorkspace()
    /// The last path of the last write read: the next record's keys are shared with it where
    /// they are the same.
    @exclusivity(unchecked) private var previousPath: Path?

    init(
        link: ReplicaLink, maxLineBytes: Int, logger: Logger,
        deliver: @escaping @Sendable (ReplicaLink, [LinkMessage]) -> Void
    ) {
        self.link = link
        self.framer = LineFramer(maxLength: maxLineBytes)
        self.logger = logger
        self.deliver = deliver
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        framer.rawFrames(in: unwrapInboundIn(data)) { frame in received(frame, context: context) }
    }

    private func received(_ frame: RawLineFrame, context: ChannelHandlerContext) {
        guard case .line(let line) = frame else {
            logger.error("the leader sent a line over the peer limit; reconnecting")
            context.close(promise: nil)
            return
        }
        switch Self.readRecord(line, into: &run, previousPath: &previousPath, reusing: &parseWorkspace) {
        case .read:
            if run.count + pending.count >= Submission.burstSlice { flush() }
            return
        case .invalidWrite:
            logger.error("the leader sent a record that is not a valid write; reconnecting")
            context.close(promise: nil)
            return
        case .otherLine:
            break
        }
        guard let json = try? JSONParser.parse(line, limits: Self.limits) else {
            logger.error("the leader sent a line that is not JSON; reconnecting")
            context.close(promise: nil)
            return
        }
        guard let message = Self.message(json) else { return }
        if case .goaway = message {
            context.close(promise: nil)
            return
        }
        endRun()
        pending.append(message)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        endRun()
        pending.append(.closed)
        flush()
        context.fireChannelInactive()
    }

    /// Ends the run of records read since the last message: they go in `pending` as one.
    private func endRun() {
        guard !run.isEmpty else { return }
        // The next run will likely hold what this one did: room for that much at once.
        let next = LinkRecords(reserving: Submission.burstSlice, bytes: run.payloads.count)
        pending.append(.records(run))
        run = next
    }

    private func flush() {
        endRun()
        guard !pending.isEmpty else { return }
        let messages = pending
        pending = []  // a new array: the engine keeps this one
        deliver(link, messages)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.warning("the peer connection to the leader failed", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    /// As deep as any stored value can be (the data limits allow up to 1,000 levels), plus the
    /// record's envelope.
    private static let limits = JSONLimits(maxDepth: 4_200)

    /// What `readRecord` made of a line.
    enum RecordLine {
        /// A record, added to the run.
        case read
        /// A write record whose payload is not a valid write (the link reconnects).
        case invalidWrite
        /// Not a `wal` line as a leader writes it: left to the JSON parser.
        case otherLine
    }

    /// A `wal` line read by position, as its leader writes it —
    /// `{"event":"wal","rev":N,"epoch":E,"w"|"od":<payload>,"confirmedRev":C}` — so that the
    /// payload's bytes are kept as they are (the replica logs them) and only the payload is
    /// parsed: added to `run`, with the JSON parser's stacks kept in `workspace` between lines and
    /// the keys of `previousPath` (the last write's last path, which it updates) shared.
    static func readRecord(
        _ bytes: UnsafeRawBufferPointer, into run: inout LinkRecords, previousPath: inout Path?,
        reusing workspace: inout JSONParseWorkspace
    ) -> RecordLine {
        var reader = LineReader(bytes: bytes)
        guard reader.skip(#"{"event":"wal","rev":"#), let rev = reader.number(), reader.skip(#","epoch":"#),
            let epoch = reader.number()
        else { return .otherLine }
        let isWrite: Bool
        if reader.skip(#","w":"#) {
            isWrite = true
        } else if reader.skip(#","od":"#) {
            isWrite = false
        } else {
            return .otherLine
        }
        guard let (confirmedRev, payloadEnd) = reader.trailingConfirmedRev() else { return .otherLine }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<payloadEnd])
        var write: CommittedWrite?
        if isWrite {
            guard
                let decoded = try? ReplicatedRecord.decodeWrite(
                    payload, rev: rev, previousPath: previousPath, reusing: &workspace)
            else { return .invalidWrite }
            if let path = decoded.overwrites.last?.path { previousPath = path }
            write = decoded
        }
        run.append(
            rev: rev, epoch: epoch, write: write, payload: payload, isWrite: isWrite, confirmedRev: confirmedRev)
        return .read
    }

    /// One `wal` line read by position (`readRecord`); nil for any other line, or a write
    /// whose payload is not valid.
    static func walRecord(_ bytes: UnsafeRawBufferPointer) -> LinkRecords? {
        var run = LinkRecords()
        var previousPath: Path?
        var workspace = JSONParseWorkspace()
        guard case .read = readRecord(bytes, into: &run, previousPath: &previousPath, reusing: &workspace) else {
            return nil
        }
        return run
    }

    private static func rev(_ value: JSONValue?) -> UInt64 {
        guard let value = value?.int64Value, value >= 0 else { return 0 }
        return UInt64(value)
    }

    /// The message a line carries; nil for lines a replica ignores (`hello`, other events).
    static func message(_ json: JSONValue) -> LinkMessage? {
        if case .string(let event)? = json["event"] {
            switch event {
            case "wal":
                // Written in another order than a leader writes it (readRecord reads those).
                let isWrite = json["w"] != nil
                guard let payload = json[isWrite ? "w" : "od"] else { return nil }
                let recordRev = rev(json["rev"])
                var run = LinkRecords()
                payload.serialized.withUnsafeBytes { bytes in
                    run.append(
                        rev: recordRev, epoch: rev(json["epoch"]),
                        write: isWrite ? try? ReplicatedRecord.decodeWrite(payload, rev: recordRev) : nil,
                        payload: bytes, isWrite: isWrite, confirmedRev: rev(json["confirmedRev"]))
                }
                return .records(run)
            case "snapshot":
                var data: String?
                if case .string(let text)? = json["data"] { data = text }
                return .snapshotChunk(
                    rev: rev(json["rev"]), data: data, done: json["done"] == .bool(true),
                    confirmedRev: rev(json["confirmedRev"]))
            case "heartbeat":
                return .heartbeat(confirmedRev: rev(json["confirmedRev"]))
            case "rules":
                return json["rules"].map(LinkMessage.rules)
            case "triggers":
                return json["cursors"].map(LinkMessage.triggerCursors)
            case "goaway":
                return .goaway
            default:
                return nil
            }
        }
        switch json["id"] {
        case .string("auth")?:
            if json["ok"] == .bool(true) { return nil }
            return .refused("the leader refused the cluster secret: \(json["error"]?["message"]?.stringValue ?? "?")")
        case .string("replicate")?:
            if json["ok"] == .bool(true), case .string(let mode)? = json["mode"] {
                return .started(
                    mode: mode, rev: rev(json["rev"]), epoch: rev(json["epoch"]),
                    history: json["history"] ?? .array([]),
                    origin: json["origin"]?.stringValue)
            }
            if json["error"]?["code"] == .string("diverged") {
                return .diverged(keepRev: rev(json["error"]?["keepRev"]))
            }
            return .refused(json["error"]?["message"]?.stringValue ?? "replicate was refused")
        case .string(let text)? where text.hasPrefix("f"):
            guard let forward = UInt64(text.dropFirst()), case .object(let members) = json else { return nil }
            return .forwardAnswer(forward: forward, members: members.filter { $0.key != "id" })
        default:
            return nil
        }
    }
}

extension ReplicaLink {
    /// Whether the connection is up (requests sent before are queued until it is).
    var isReady: Bool { channel.withLockedValue { $0 != nil } }
}

/// Reads a line the leader wrote, by position.
private struct LineReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Skips `text` if the line continues with it.
    mutating func skip(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - offset >= count, let base = bytes.baseAddress,
            memcmp(base + offset, text.utf8Start, count) == 0
        else { return false }
        offset += count
        return true
    }

    /// A non-negative integer of at most 18 digits.
    mutating func number() -> UInt64? {
        var value: UInt64 = 0
        let start = offset
        while offset < bytes.count, offset - start < 18, (48...57).contains(bytes[offset]) {
            value = value * 10 + UInt64(bytes[offset] - 48)
            offset += 1
        }
        return offset > start ? value : nil
    }

    /// The line's end, `,"confirmedRev":C}`: C, and where that end starts.
    func trailingConfirmedRev() -> (UInt64, Int)? {
        let suffix: StaticString = #","confirmedRev":"#
        let end = bytes.count - 1
        guard end > offset, bytes[end] == UInt8(ascii: "}") else { return nil }
        // The digits, read backwards in one pass.
        var value: UInt64 = 0
        var scale: UInt64 = 1
        var digitsStart = end
        while digitsStart > offset, end - digitsStart < 18 {
            let digit = bytes[digitsStart - 1] &- 48
            guard digit < 10 else { break }
            value += UInt64(digit) * scale
            scale &*= 10
            digitsStart -= 1
        }
        let suffixStart = digitsStart - suffix.utf8CodeUnitCount
        guard digitsStart < end, suffixStart > offset, let base = bytes.baseAddress,
            memcmp(base + suffixStart, suffix.utf8Start, suffix.utf8CodeUnitCount) == 0
        else { return nil }
        return (value, suffixStart)
    }
}
