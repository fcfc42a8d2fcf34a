import ArgumentParser

/// One writer, K subscribers of one path (Hearth) or channel (Redis PUBLISH to SUBSCRIBE
/// connections): events delivered per second.
struct FanoutScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout", abstract: "1 writer → K subscribers of one path or channel (events delivered/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Subscriber connections.") var subscribers = 100
    @Option(help: "Writes.") var writes = 20_000
    @Option(help: "Writes in flight per window.") var window = 200
    @Option(
        name: .customLong("writer-port"),
        help:
            "Write over Hearth's line protocol on this port, whatever the subscribers' target (to compare the delivery of events alone, e.g. SSE streams against TCP subscriptions)."
    )
    var writerPort: Int?
    @Option(
        name: .customLong("subscriber-ports"),
        help: "Spread the subscribers over these Hearth ports, round robin (comma-separated: the nodes of a cluster).")
    var subscriberPorts: String?

    func validate() throws {
        guard subscribers > 0, writes > 0, window > 0 else {
            throw ValidationError("--subscribers, --writes and --window must be positive")
        }
    }

    func run() async throws {
        try server.checkLoopback()
        var subs: [BenchConnection] = []
        let ports = subscriberPorts?.split(separator: ",").compactMap { Int($0) } ?? []
        for index in 0..<subscribers {
            var subscriberServer = server
            if !ports.isEmpty { subscriberServer.port = ports[index % ports.count] }
            let connection = try await subscriberServer.connect()
            try await connection.request(.subscribe(key: ["fan"])).get()
            subs.append(connection)
        }
        var writerServer = server
        if let writerPort {
            writerServer.target = .hearth
            writerServer.port = writerPort
        }
        let writer = try await writerServer.connect()
        // Let Hearth's initial value events arrive before counting.
        try await Task.sleep(for: .milliseconds(200))
        var baseline = 0
        for s in subs { baseline += try await s.eventCount }
        progress(
            "fanout (\(server.target)): \(writes) writes to \(subscribers) subscribers, at most \(server.seconds) s")
        let expected = writes * subscribers
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        var sent = 0
        while sent < writes, monotonicNanoseconds() < deadline {
            let requests = (sent..<min(writes, sent + window)).map {
                BenchRequest.publish(key: ["fan"], value: UInt64($0))
            }
            try await writer.send(requests).get()
            sent += requests.count
        }
        var delivered = 0
        while monotonicNanoseconds() < deadline {
            delivered = -baseline
            for s in subs { delivered += try await s.eventCount }
            if delivered >= sent * subscribers { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        for s in subs { await s.close() }
        await writer.close()
        report(
            scenario: "fanout", target: server.target,
            [
                ("subscribers", .int(Int64(subscribers))), ("writes", .int(Int64(sent))),
                ("eventsExpected", .int(Int64(expected))), ("eventsDelivered", .int(Int64(delivered))),
                ("seconds", .double(elapsed)), ("eventsPerSecond", .double(Double(delivered) / elapsed)),
            ])
    }
}
