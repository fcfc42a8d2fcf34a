import ArgumentParser

/// One connection sending writes without waiting, in windows.
struct PipelinedScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipelined", abstract: "Pipelined writes from one connection (ops/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Total writes.") var count = 500_000
    @Option(help: "Requests in flight per window.") var window = 2000
    @Option(
        help: """
            Hearth only: before timing, store this many other leaves beside the written keys \
            (under /bench/p), to measure a write's cost against the width of its parent.
            """)
    var prefill = 0

    func validate() throws {
        guard count > 0, window > 0 else { throw ValidationError("--count and --window must be positive") }
        guard prefill >= 0 else { throw ValidationError("--prefill must not be negative") }
        guard prefill == 0 || server.target == .hearth else {
            throw ValidationError("--prefill is for --target hearth (Redis has no node to widen)")
        }
    }

    func run() async throws {
        try server.checkLoopback()
        let client = try await server.connect()
        if prefill > 0 {
            progress("storing \(prefill) leaves under /bench/p first…")
            try await storeLeaves(prefill, under: ["bench", "p"], client: client)
        }
        progress("pipelined (\(server.target)): \(count) writes in windows of \(window), at most \(server.seconds) s")
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        var done = 0
        while done < count, monotonicNanoseconds() < deadline {
            let requests = (done..<min(count, done + window)).map {
                BenchRequest.set(key: ["bench", "p", String($0 % 1000)], value: $0)
            }
            try await client.send(requests).get()
            done += requests.count
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await client.close()
        report(
            scenario: "pipelined", target: server.target,
            [
                ("writes", .int(Int64(done))), ("prefill", .int(Int64(prefill))), ("seconds", .double(elapsed)),
                ("opsPerSecond", .double(Double(done) / elapsed)),
            ])
    }
}

/// Stores leaves `k<i>` = i for i < `count` under `key`, in pipelined requests of `batch` leaves,
/// `window` requests at a time, until done or past `deadline`; returns how many were stored.
@discardableResult
func storeLeaves(
    _ count: Int, under key: [String], client: BenchConnection, batch: Int = 1000, window: Int = 16,
    deadline: UInt64 = .max
) async throws -> Int {
    var stored = 0
    while stored < count, monotonicNanoseconds() < deadline {
        var requests: [BenchRequest] = []
        while requests.count < window, stored < count {
            requests.append(.storeLeaves(key: key, range: stored..<min(count, stored + batch)))
            stored = min(count, stored + batch)
        }
        try await client.send(requests).get()
    }
    return stored
}
