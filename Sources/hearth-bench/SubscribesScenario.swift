import ArgumentParser

/// Subscriptions per second: one connection subscribes to N distinct locations under `/fan`,
/// pipelined in windows, and waits for every answer (with rules, each subscribe is a read check).
struct SubscribesScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribes", abstract: "Subscriptions per second on one connection (Hearth only).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Subscriptions.") var count = 100_000
    @Option(help: "Requests in flight per window.") var window = 1000

    func validate() throws {
        guard count > 0, window > 0 else { throw ValidationError("--count and --window must be positive") }
        guard server.target == .hearth else { throw ValidationError("subscribes drives Hearth only") }
    }

    func run() async throws {
        try server.checkLoopback()
        let client = try await server.connect()
        progress("subscribes: \(count) subscriptions in windows of \(window), at most \(server.seconds) s")
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        var done = 0
        while done < count, monotonicNanoseconds() < deadline {
            let requests = (done..<min(count, done + window)).map { BenchRequest.subscribe(key: ["fan", "s\($0)"]) }
            try await client.send(requests).get()
            done += requests.count
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await client.close()
        report(
            scenario: "subscribes", target: server.target,
            [
                ("subscriptions", .int(Int64(done))), ("seconds", .double(elapsed)),
                ("subscribesPerSecond", .double(Double(done) / elapsed)),
            ])
    }
}
