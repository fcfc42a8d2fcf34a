import ArgumentParser
import NIOCore

/// Write-to-event latency at a fixed write rate: one writer publishes its send time (monotonic
/// nanoseconds, taken as the request is encoded) to K subscribers of one path (Hearth) or channel
/// (Redis); each subscriber records now − sent per event in an HdrHistogram.
struct LatencyScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency", abstract: "Write-to-event latency at a fixed rate (HdrHistogram percentiles).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Writes per second.") var rate = 1000
    @Option(help: "Subscriber connections.") var subscribers = 10
    @Option(help: "Seconds of writing (the scenario stops at --seconds in any case).") var duration: Double = 10

    func validate() throws {
        guard rate > 0, rate <= 1_000_000, subscribers > 0, duration > 0 else {
            throw ValidationError("--rate (at most 1,000,000), --subscribers and --duration must be positive")
        }
    }

    func run() async throws {
        try server.checkLoopback()
        let deadline = server.deadline
        var subs: [BenchConnection] = []
        for _ in 0..<subscribers {
            let connection = try await server.connect()
            try await connection.request(.subscribe(key: ["lat"])).get()
            subs.append(connection)
        }
        let writer = try await server.connect()
        try await Task.sleep(for: .milliseconds(200))
        let writes = Int(Double(rate) * duration)
        let interval = 1_000_000_000 / UInt64(rate)
        let start = monotonicNanoseconds() + 10_000_000
        for s in subs { try await s.recordLatencies(since: start) }
        progress(
            "latency (\(server.target)): \(writes) writes at \(rate)/s to \(subscribers) subscribers, at most \(server.seconds) s"
        )

        // Each write is sent from the writer's event loop at its scheduled instant, whatever the
        // answers to earlier ones are doing (no coordinated omission by the writer).
        let loop = writer.channel.eventLoop
        var answers: [EventLoopFuture<Void>] = []
        answers.reserveCapacity(writes)
        var sent = 0
        while sent < writes, monotonicNanoseconds() < deadline {
            let at = NIODeadline.uptimeNanoseconds(start + UInt64(sent) * interval)
            let answer = try await loop.scheduleTask(deadline: at) { writer.request(.publishTimestamp(key: ["lat"])) }
                .futureResult.get()
            answers.append(answer)
            sent += 1
        }
        let sendSeconds = Double(monotonicNanoseconds() - start) / 1e9
        try await EventLoopFuture.andAllSucceed(answers, on: loop).get()

        var all = latencyHistogram()
        let expected = UInt64(sent * subscribers)
        while monotonicNanoseconds() < deadline {
            all = latencyHistogram()
            for s in subs { if let h = try await s.latencies { all.add(h) } }
            if all.totalCount >= expected { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        for s in subs { await s.close() }
        await writer.close()
        report(
            scenario: "latency", target: server.target,
            [
                ("subscribers", .int(Int64(subscribers))), ("rate", .int(Int64(rate))), ("writes", .int(Int64(sent))),
                ("achievedRate", .double(Double(sent) / sendSeconds)), ("eventsExpected", .int(Int64(expected))),
                ("eventsMeasured", .int(Int64(all.totalCount))),
            ] + latencyFields(all))
    }
}
