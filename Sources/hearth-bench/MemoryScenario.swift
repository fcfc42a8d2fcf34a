import ArgumentParser

/// Memory per leaf: N integer leaves `k<i>` under one location (Hearth multi-path `update`s;
/// Redis `HSET` of as many hash fields), written in pipelined batches; the server's RSS before and
/// after, divided by N.
struct MemoryScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "memory", abstract: "Server memory per leaf for N leaves (RSS after − before, / N).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Leaves to write.") var leaves = 1_000_000
    @Option(help: "Leaves per request.") var batch = 1000
    @Option(help: "Requests in flight per window.") var window = 16
    @Option(help: "The server's process id, to read its RSS from /proc/<pid>/status.") var serverPid: Int32

    func validate() throws {
        guard leaves > 0, batch > 0, window > 0 else {
            throw ValidationError("--leaves, --batch and --window must be positive")
        }
    }

    func run() async throws {
        try server.checkLoopback()
        guard let rssBefore = residentBytes(pid: serverPid) else {
            throw ValidationError("cannot read /proc/\(serverPid)/status")
        }
        let client = try await server.connect()
        progress("memory (\(server.target)): \(leaves) leaves in requests of \(batch), at most \(server.seconds) s")
        let start = monotonicNanoseconds()
        let written = try await storeLeaves(
            leaves, under: ["mem"], client: client, batch: batch, window: window, deadline: server.deadline)
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await client.close()
        // Both servers settle first: each returns some freed memory to the system once idle.
        try await Task.sleep(for: .seconds(2))
        let rssAfter = residentBytes(pid: serverPid) ?? 0
        progress("\(written) leaves in \(elapsed) s; server RSS \(rssBefore / 1_048_576) → \(rssAfter / 1_048_576) MiB")
        report(
            scenario: "memory", target: server.target,
            [
                ("leaves", .int(Int64(written))), ("seconds", .double(elapsed)),
                ("rssBeforeMiB", .double(mebibytes(rssBefore))),
                ("rssAfterMiB", .double(mebibytes(rssAfter))),
                ("bytesPerLeaf", .double(written > 0 ? (Double(rssAfter - rssBefore) / Double(written)).rounded() : 0)),
            ])
    }
}
