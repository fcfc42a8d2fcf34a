import ArgumentParser

/// One connection sending writes without waiting, in windows.
struct PipelinedScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipelined", abstract: "Pipelined writes from one connection (ops/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Total writes.") var count = 500_000
    @Option(help: "Requests in flight per window.") var window = 2000

    func validate() throws {
        guard count > 0, window > 0 else { throw ValidationError("--count and --window must be positive") }
    }

    func run() async throws {
        try server.checkLoopback()
        let client = try await server.connect()
        progress("pipelined (\(server.target)): \(count) writes in windows of \(window), at most \(server.seconds) s")
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        var done = 0
        while done < count, monotonicNanoseconds() < deadline {
            let requests = (done..<min(count, done + window)).map { BenchRequest.set(key: ["bench", "p", String($0 % 1000)], value: $0) }
            try await client.send(requests).get()
            done += requests.count
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await client.close()
        report(
            scenario: "pipelined", target: server.target,
            [("writes", .int(Int64(done))), ("seconds", .double(elapsed)), ("opsPerSecond", .double(Double(done) / elapsed))])
    }
}
