import ArgumentParser
import Histogram

/// Unpipelined writes from N connections: each waits for its answer before the next request.
/// Hearth `set` against Redis `SET`; against a server that fsyncs, these are fsync-acknowledged.
struct WritesScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "writes", abstract: "Unpipelined writes from N connections (ops/s and latency).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Connections.") var connections = 50
    @Option(help: "Total writes.") var count = 200_000

    func validate() throws {
        guard connections > 0, count > 0 else { throw ValidationError("--connections and --count must be positive") }
    }

    func run() async throws {
        try server.checkLoopback()
        var clients: [BenchConnection] = []
        for _ in 0..<connections { clients.append(try await server.connect()) }
        progress("writes (\(server.target)): \(connections) connections, \(count) writes, at most \(server.seconds) s")
        let perConnection = max(1, count / connections)
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        let latencies = try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { tasks in
            for (c, client) in clients.enumerated() {
                tasks.addTask {
                    var histogram = latencyHistogram()
                    for n in 0..<perConnection {
                        let sent = monotonicNanoseconds()
                        if sent > deadline { break }
                        try await client.request(.set(key: ["bench", "c\(c)"], value: n)).get()
                        _ = histogram.record(monotonicNanoseconds() - sent)
                    }
                    return histogram
                }
            }
            var all = latencyHistogram()
            for try await histogram in tasks { all.add(histogram) }
            return all
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        for client in clients { await client.close() }
        let writes = Int64(latencies.totalCount)
        report(
            scenario: "writes", target: server.target,
            [
                ("connections", .int(Int64(connections))), ("writes", .int(writes)), ("seconds", .double(elapsed)),
                ("opsPerSecond", .double(Double(writes) / elapsed)),
            ] + latencyFields(latencies))
    }
}
