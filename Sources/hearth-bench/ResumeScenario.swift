import ArgumentParser
import HearthJSON
import HearthProtocol
import NIOCore
import NIOPosix

/// The bytes a reconnecting subscriber downloads: a cache-mode subscription to a location of
/// `--children` children, then `--changes` writes while it is away (sets, removes and adds in
/// equal parts), then a resubscription with `since` (only the changes) beside a full one.
struct ResumeScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Bytes of a resumed subscription against a full one (Hearth only).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Children of the location.") var children = 10_000
    @Option(help: "Writes made while the subscriber is away.") var changes = 10
    @Option(help: "The location (its data is replaced).") var path = "/bench/resume"

    func validate() throws {
        guard children > 0, changes > 0, changes <= children else {
            throw ValidationError("--children and --changes must be positive, with --changes ≤ --children")
        }
        guard server.target == .hearth else { throw ValidationError("resume drives Hearth only") }
    }

    func run() async throws {
        try server.checkLoopback()
        progress("resume: \(children) children at \(path), \(changes) changes while away")
        var value: [JSONMember] = []
        for i in 0..<children {
            value.append(
                JSONMember(
                    key(i), .object([JSONMember("n", .int(Int64(i))), JSONMember("text", .string("child \(i)"))])))
        }
        let document = JSONValue.object(value).jsonString
        let path = self.path
        try await LineSession.run(host: server.host, port: server.port) { writer in
            _ = try await writer.request(#"{"op":"set","path":"\#(path)","value":\#(document)}"#)
        }
        let full = try await LineSession.run(host: server.host, port: server.port) { subscriber in
            try await subscriber.subscribe(path: path, since: nil)
        }
        let writes = (0..<changes).map { i in
            switch i % 3 {
            case 0: return #"{"op":"set","path":"\#(path)/\#(key(i))/n","value":-1}"#
            case 1: return #"{"op":"remove","path":"\#(path)/\#(key(i))"}"#
            default: return #"{"op":"set","path":"\#(path)/added\#(i)","value":{"n":\#(i)}}"#
            }
        }
        try await LineSession.run(host: server.host, port: server.port) { writer in
            for write in writes { _ = try await writer.request(write) }
        }
        let (resumed, fresh) = try await LineSession.run(host: server.host, port: server.port) { subscriber in
            (
                try await subscriber.subscribe(path: path, since: full.rev),
                try await subscriber.subscribe(path: path, since: nil)
            )
        }
        report(
            scenario: "resume", target: server.target,
            [
                ("children", .int(Int64(children))), ("changes", .int(Int64(changes))),
                ("fullBytes", .int(Int64(fresh.bytes))), ("fullEvents", .int(Int64(fresh.events))),
                ("resumedBytes", .int(Int64(resumed.bytes))), ("resumedEvents", .int(Int64(resumed.events))),
                ("resumed", .bool(resumed.resumed)),
                ("resumedShareOfFull", .double(Double(resumed.bytes) / Double(max(1, fresh.bytes)))),
            ])
    }

    private func key(_ i: Int) -> String {
        let digits = String(i)
        return "k" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }
}

/// A line-protocol session that sends one request at a time and reads its answer and the
/// events that belong to it, counting their bytes.
private struct LineSession {
    var lines: NIOAsyncChannelInboundStream<LineFrame>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    var nextID = 1

    struct Subscription: Sendable {
        var rev: Int64 = 0
        var bytes = 0
        var events = 0
        var resumed = false
    }

    /// Connects, reads the hello, runs `body`, and closes.
    static func run<Result: Sendable>(
        host: String, port: Int, _ body: (inout LineSession) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        LineFrameDecoder(maxLength: 1 << 30))
                    return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var session = LineSession(lines: inbound.makeAsyncIterator(), outbound: outbound)
            _ = try await session.nextLine()  // the hello
            return try await body(&session)
        }
    }

    mutating func nextLine() async throws -> ByteBuffer {
        guard case .line(let line)? = try await lines.next() else {
            throw BenchRequestFailed(description: "the server closed the connection")
        }
        return line
    }

    /// Sends `body` (a request object without its id) and returns the answer.
    mutating func request(_ body: String) async throws -> JSONValue {
        let id = nextID
        nextID += 1
        try await outbound.write(ByteBuffer(string: #"{"id":\#(id),"# + body.dropFirst() + "\n"))
        while true {
            let answer = try await nextLine()
            let json = try JSONParser.parse(Array(answer.readableBytesView))
            guard json["id"]?.int64Value == Int64(id) else { continue }
            guard json["ok"]?.boolValue == true else {
                throw BenchRequestFailed(description: "request failed: \(String(buffer: answer))")
            }
            return json
        }
    }

    /// A cache-mode subscription (from `since` when given): the bytes of its answer and of the
    /// initial events the answer announces.
    mutating func subscribe(path: String, since: Int64?) async throws -> Subscription {
        let sinceMember = since.map { #","since":\#($0)"# } ?? ""
        let id = nextID
        nextID += 1
        let events = #"["child_added","child_changed","child_removed","value"]"#
        let line =
            #"{"id":\#(id),"op":"subscribe","path":"\#(path)","events":\#(events),"cache":true\#(sinceMember)}"#
        try await outbound.write(ByteBuffer(string: line + "\n"))
        var result = Subscription()
        let answer = try await nextLine()
        let json = try JSONParser.parse(Array(answer.readableBytesView))
        guard json["ok"]?.boolValue == true else {
            throw BenchRequestFailed(description: "subscribe failed: \(String(buffer: answer))")
        }
        result.bytes = answer.readableBytes + 1
        result.rev = json["rev"]?.int64Value ?? 0
        result.resumed = json["resumed"]?.boolValue == true
        for _ in 0..<Int(json["initial"]?.int64Value ?? 0) {
            result.bytes += try await nextLine().readableBytes + 1
            result.events += 1
        }
        return result
    }
}
