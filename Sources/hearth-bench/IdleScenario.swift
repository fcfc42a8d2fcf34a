import ArgumentParser
import NIOCore

/// N idle connections, each subscribed to its own path (Hearth) or channel (Redis): how many the
/// server holds, and its resident memory with them open.
struct IdleScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idle", abstract: "N idle subscribed connections: how many succeed, and the server's RSS.")

    @OptionGroup var server: ServerOptions
    @Option(help: "Connections to open, each with one subscription.") var connections = 20_000
    @Option(help: "Connections being opened at once.") var concurrency = 200
    @Option(help: "The server's process id, to read its RSS from /proc/<pid>/status.") var serverPid: Int32

    func validate() throws {
        guard connections > 0, concurrency > 0 else {
            throw ValidationError("--connections and --concurrency must be positive")
        }
    }

    func run() async throws {
        try server.checkLoopback()
        guard let rssBefore = residentBytes(pid: serverPid) else {
            throw ValidationError("cannot read /proc/\(serverPid)/status")
        }
        let fileLimit = raiseOpenFileLimit()
        progress(
            "idle (\(server.target)): \(connections) subscribed connections (open-file limit \(fileLimit)), at most \(server.seconds) s"
        )
        let deadline = server.deadline
        let server = self.server
        var open: [BenchConnection] = []
        var failures = 0
        var firstFailure: String?
        var failuresInARow = 0
        let answerTimeout = TimeAmount.seconds(5)
        await withTaskGroup(of: Result<BenchConnection, any Error>.self) { tasks in
            var started = 0
            func startOne() {
                let i = started
                started += 1
                tasks.addTask {
                    do {
                        let connection = try await server.connect()
                        // A server out of file descriptors leaves the connection in its accept
                        // queue, unanswered: give up on it after a while.
                        let timeout = connection.channel.eventLoop.scheduleTask(in: answerTimeout) {
                            connection.channel.close(promise: nil)
                        }
                        defer { timeout.cancel() }
                        do {
                            try await connection.request(.subscribe(key: ["idle", "c\(i)"])).get()
                        } catch {
                            await connection.close()
                            throw error
                        }
                        return .success(connection)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            while started < min(concurrency, connections) { startOne() }
            for await result in tasks {
                switch result {
                case .success(let connection):
                    open.append(connection)
                    failuresInARow = 0
                case .failure(let error):
                    failures += 1
                    failuresInARow += 1
                    if firstFailure == nil { firstFailure = "\(error)" }
                }
                if (open.count + failures) % 5000 == 0 { progress("\(open.count) open, \(failures) failed") }
                // Stop trying once the server (or this process) is evidently at its limit.
                if started < connections, monotonicNanoseconds() < deadline, failuresInARow < 2 * concurrency {
                    startOne()
                }
            }
        }
        // Let the server settle, then count the connections it still holds.
        try await Task.sleep(for: .seconds(1))
        let rssAfter = residentBytes(pid: serverPid) ?? 0
        let alive = open.filter(\.isActive).count
        progress(
            "\(alive) connections alive, server RSS \(rssAfter / 1_048_576) MiB"
                + (firstFailure.map { "; first failure: \($0)" } ?? ""))
        for connection in open { await connection.close() }
        report(
            scenario: "idle", target: server.target,
            [
                ("attempted", .int(Int64(connections))), ("connections", .int(Int64(alive))),
                ("failed", .int(Int64(failures))),
                ("openFileLimit", .int(Int64(fileLimit))), ("rssBeforeMiB", .double(mebibytes(rssBefore))),
                ("rssMiB", .double(mebibytes(rssAfter))),
                ("bytesPerConnection", .double(alive > 0 ? Double(rssAfter - rssBefore) / Double(alive) : 0)),
            ])
    }
}

func mebibytes(_ bytes: Int) -> Double { (Double(bytes) / 1_048_576 * 10).rounded() / 10 }
