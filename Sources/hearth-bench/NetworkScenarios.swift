import ArgumentParser
import HearthJSON
import NIOCore
import NIOPosix

/// Where the server under test listens, and the bounds every network scenario respects.
struct ServerOptions: ParsableArguments {
    @Option(help: "Server address (loopback only).")
    var host = "127.0.0.1"

    @Option(help: "Server port.")
    var port = 9000

    @Option(help: "Stop after this many seconds even if the count is not reached.")
    var seconds: Double = 30

    func checkLoopback() throws {
        guard host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
            throw ValidationError("hearth-bench only drives servers on the loopback interface")
        }
    }
}

/// Unpipelined `set`s from N connections: each waits for its answer before the next request.
struct WritesScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "writes", abstract: "Unpipelined sets from N connections (ops/s and latency).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Connections.") var connections = 50
    @Option(help: "Total writes.") var count = 200_000

    func run() async throws {
        try server.checkLoopback()
        let group = MultiThreadedEventLoopGroup.singleton
        var clients: [BenchConnection] = []
        for _ in 0..<connections {
            clients.append(try await BenchConnection.connect(host: server.host, port: server.port, group: group))
        }
        progress("writes: \(connections) connections, \(count) sets, at most \(server.seconds) s")
        let perConnection = max(1, count / connections)
        let deadline = monotonicNanoseconds() + UInt64(server.seconds * 1e9)
        let start = monotonicNanoseconds()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { tasks in
            for (c, client) in clients.enumerated() {
                tasks.addTask {
                    var samples: [UInt64] = []
                    samples.reserveCapacity(perConnection)
                    for n in 0..<perConnection {
                        let sent = monotonicNanoseconds()
                        if sent > deadline { break }
                        _ = try await client.request(#"{"op":"set","path":"/bench/c\#(c)","value":\#(n)}"#).get()
                        samples.append(monotonicNanoseconds() - sent)
                    }
                    return samples
                }
            }
            var all: [UInt64] = []
            for try await samples in tasks { all += samples }
            return all
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        for client in clients { await client.close() }
        report(
            scenario: "writes",
            [
                "connections": .int(Int64(connections)), "writes": .int(Int64(latencies.count)),
                "seconds": .double(elapsed), "opsPerSecond": .double(Double(latencies.count) / elapsed),
            ] + percentiles(latencies))
    }
}

/// One connection sending writes without waiting, in windows.
struct PipelinedScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipelined", abstract: "Pipelined sets from one connection (ops/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Total writes.") var count = 500_000
    @Option(help: "Requests in flight per window.") var window = 2000

    func run() async throws {
        try server.checkLoopback()
        let group = MultiThreadedEventLoopGroup.singleton
        let client = try await BenchConnection.connect(host: server.host, port: server.port, group: group)
        progress("pipelined: \(count) sets in windows of \(window), at most \(server.seconds) s")
        let deadline = monotonicNanoseconds() + UInt64(server.seconds * 1e9)
        let start = monotonicNanoseconds()
        var done = 0
        while done < count, monotonicNanoseconds() < deadline {
            let lines = (done..<min(count, done + window)).map { #"{"op":"set","path":"/bench/p/\#($0 % 1000)","value":\#($0)}"# }
            _ = try await client.pipeline(lines).get()
            done += lines.count
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await client.close()
        report(
            scenario: "pipelined",
            ["writes": .int(Int64(done)), "seconds": .double(elapsed), "opsPerSecond": .double(Double(done) / elapsed)])
    }
}

/// One writer, K subscribers of one location: events delivered per second.
struct FanoutScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout", abstract: "1 writer → K subscribers of one path (events delivered/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Subscriber connections.") var subscribers = 100
    @Option(help: "Writes.") var writes = 20_000

    func run() async throws {
        try server.checkLoopback()
        let group = MultiThreadedEventLoopGroup.singleton
        var subs: [BenchConnection] = []
        for _ in 0..<subscribers {
            let c = try await BenchConnection.connect(host: server.host, port: server.port, group: group)
            _ = try await c.request(#"{"op":"subscribe","path":"/fan"}"#).get()
            subs.append(c)
        }
        let writer = try await BenchConnection.connect(host: server.host, port: server.port, group: group)
        // Let the initial value events arrive before counting.
        try await Task.sleep(for: .milliseconds(200))
        var baseline = 0
        for s in subs { baseline += try await s.eventCount }
        progress("fanout: \(writes) writes to \(subscribers) subscribers, at most \(server.seconds) s")
        let expected = writes * subscribers
        let deadline = monotonicNanoseconds() + UInt64(server.seconds * 1e9)
        let start = monotonicNanoseconds()
        var sent = 0
        while sent < writes, monotonicNanoseconds() < deadline {
            let lines = (sent..<min(writes, sent + 200)).map { #"{"op":"set","path":"/fan","value":\#($0)}"# }
            _ = try await writer.pipeline(lines).get()
            sent += lines.count
        }
        var delivered = 0
        while monotonicNanoseconds() < deadline {
            delivered = 0
            for s in subs { delivered += try await s.eventCount }
            delivered -= baseline
            if delivered >= sent * subscribers { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        for s in subs { await s.close() }
        await writer.close()
        report(
            scenario: "fanout",
            [
                "subscribers": .int(Int64(subscribers)), "writes": .int(Int64(sent)),
                "eventsExpected": .int(Int64(expected)), "eventsDelivered": .int(Int64(delivered)),
                "seconds": .double(elapsed), "eventsPerSecond": .double(Double(delivered) / elapsed),
            ])
    }
}

/// V distinct views under one parent; a writer touches one of them at a time.
struct ViewsScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "views", abstract: "Write cost with V distinct views under one parent (ops/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Distinct views (subscriptions at /rooms/r<i>).") var views = 10_000
    @Option(help: "Writes.") var writes = 100_000

    func run() async throws {
        try server.checkLoopback()
        let group = MultiThreadedEventLoopGroup.singleton
        let subscriber = try await BenchConnection.connect(host: server.host, port: server.port, group: group)
        var i = 0
        while i < views {
            let lines = (i..<min(views, i + 1000)).map { #"{"op":"subscribe","path":"/rooms/r\#($0)"}"# }
            _ = try await subscriber.pipeline(lines).get()
            i += lines.count
        }
        let writer = try await BenchConnection.connect(host: server.host, port: server.port, group: group)
        progress("views: \(views) views, \(writes) writes each touching one, at most \(server.seconds) s")
        let deadline = monotonicNanoseconds() + UInt64(server.seconds * 1e9)
        let start = monotonicNanoseconds()
        var sent = 0
        var rng = SystemRandomNumberGenerator()
        while sent < writes, monotonicNanoseconds() < deadline {
            let lines = (sent..<min(writes, sent + 1000)).map {
                #"{"op":"set","path":"/rooms/r\#(Int.random(in: 0..<views, using: &rng))/last","value":\#($0)}"#
            }
            _ = try await writer.pipeline(lines).get()
            sent += lines.count
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await subscriber.close()
        await writer.close()
        report(
            scenario: "views",
            [
                "views": .int(Int64(views)), "writes": .int(Int64(sent)), "seconds": .double(elapsed),
                "opsPerSecond": .double(Double(sent) / elapsed),
            ])
    }
}

/// p50/p90/p99/max of nanosecond samples, in milliseconds.
func percentiles(_ samples: [UInt64]) -> [(String, JSONValue)] {
    guard !samples.isEmpty else { return [] }
    let sorted = samples.sorted()
    func at(_ q: Double) -> JSONValue {
        .double(Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1e6)
    }
    return [("p50Ms", at(0.5)), ("p90Ms", at(0.9)), ("p99Ms", at(0.99)), ("maxMs", .double(Double(sorted[sorted.count - 1]) / 1e6))]
}

/// Prints the scenario's one machine-readable JSON line.
func report(scenario: String, _ fields: [(String, JSONValue)]) {
    let members = [JSONMember("scenario", .string(scenario))] + fields.map { JSONMember($0.0, $0.1) }
    print(JSONValue.object(members).jsonString)
}

func report(scenario: String, _ fields: KeyValuePairs<String, JSONValue>) {
    report(scenario: scenario, fields.map { ($0.key, $0.value) })
}

func + (lhs: KeyValuePairs<String, JSONValue>, rhs: [(String, JSONValue)]) -> [(String, JSONValue)] {
    lhs.map { ($0.key, $0.value) } + rhs
}
