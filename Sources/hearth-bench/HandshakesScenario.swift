import ArgumentParser

/// New connections per second: each connects (over TLS with `--tls-ca`, so a full handshake),
/// completes one round trip and closes, from K concurrent openers.
struct HandshakesScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handshakes", abstract: "New connections per second (connect, one ping, close).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Connections opened at the same time.") var concurrency = 8
    @Option(help: "Connections in all.") var count = 5_000

    func validate() throws {
        guard concurrency > 0, count > 0 else { throw ValidationError("--concurrency and --count must be positive") }
    }

    func run() async throws {
        try server.checkLoopback()
        progress(
            "handshakes (\(server.target)\(server.tlsCA == nil ? "" : ", TLS")): \(count) connections, \(concurrency) at a time, at most \(server.seconds) s"
        )
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        let perOpener = max(1, count / concurrency)
        let opened = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for _ in 0..<concurrency {
                tasks.addTask {
                    var done = 0
                    while done < perOpener, monotonicNanoseconds() < deadline {
                        let connection = try await server.connect()
                        try await connection.request(.ping).get()
                        await connection.close()
                        done += 1
                    }
                    return done
                }
            }
            var total = 0
            for try await done in tasks { total += done }
            return total
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        report(
            scenario: "handshakes", target: server.target,
            [
                ("tls", .bool(server.tlsCA != nil)), ("connections", .int(Int64(opened))),
                ("seconds", .double(elapsed)),
                ("connectionsPerSecond", .double(Double(opened) / elapsed)),
            ])
    }
}
