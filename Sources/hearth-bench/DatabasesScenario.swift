import ArgumentParser
import HearthJSON

/// Pipelined writes to two databases at once against writes to one, in interleaved rounds on the
/// same server: each connection chooses its database with `use` and sends `--window` writes at
/// a time from the lean generator's one thread. A third load, two connections to the same
/// database, gives the same client load to one engine. With `--server-pid`, the server's
/// threads' time on a core and waiting for one, per load.
struct DatabasesScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "databases",
        abstract: "Pipelined writes to two databases at once against one database (writes/s), interleaved rounds.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The first database (written alone and beside the second).") var first = "bench-a"
    @Option(help: "The second database.") var second = "bench-b"
    @Option(help: "Writes per connection in each measured run.") var count = 1_000_000
    @Option(help: "Requests in flight per connection (redis-benchmark -P).") var window = 2000
    @Option(help: "Rounds; each runs every load once, in an order that alternates.") var rounds = 3
    @Option(help: "The server's process id, to read its threads' times from /proc/<pid>/task.")
    var serverPid: Int32?

    func validate() throws {
        guard count > 0, window > 0, rounds > 0 else {
            throw ValidationError("--count, --window and --rounds must be positive")
        }
        guard server.target == .hearth, server.tlsCA == nil else {
            throw ValidationError("databases drives hearth's line protocol over plain TCP")
        }
        guard first != second else { throw ValidationError("--first and --second must differ") }
    }

    /// A load: the database of each connection.
    struct Load {
        let key: String
        let databases: [String]
    }

    /// What the runs of one load added up to.
    struct Totals {
        var rates: [Double] = []
        var perDatabase: [[Double]] = []
        var writes = 0
        var wallNanoseconds: UInt64 = 0
        var generatorNanoseconds: UInt64 = 0
        var threads: [String: (ran: UInt64, waited: UInt64)] = [:]
    }

    func run() throws {
        try server.checkLoopback()
        let loads = [
            Load(key: "one", databases: [first]),
            Load(key: "two", databases: [first, second]),
            Load(key: "oneDatabaseTwoConnections", databases: [first, first]),
        ]
        progress(
            "databases: \(count) writes per connection, window \(window), \(rounds) rounds, each run at most \(server.seconds) s"
        )
        // Opens both databases (created on first use, or opened if closed) and warms the server.
        for load in loads { _ = try run(load, writesPerConnection: min(count, 50_000)) }
        var totals = [String: Totals]()
        for round in 1...rounds {
            let order = round % 2 == 1 ? loads : loads.reversed()
            for load in order {
                let before = serverPid.map { threadTimes(pid: $0) } ?? [:]
                let cpuBefore = ownCPUNanoseconds()
                let started = monotonicNanoseconds()
                let result = try run(load, writesPerConnection: count)
                let wall = monotonicNanoseconds() - started
                let generator = ownCPUNanoseconds() - cpuBefore
                let after = serverPid.map { threadTimes(pid: $0) } ?? [:]
                var total = totals[load.key] ?? Totals()
                total.rates.append(result.perSecond)
                total.perDatabase.append(result.perConnection.map { Double($0) / result.seconds })
                total.writes += result.requests
                total.wallNanoseconds += wall
                total.generatorNanoseconds += generator
                for (tid, now) in after {
                    let then = before[tid]
                    var entry = total.threads[now.name] ?? (0, 0)
                    entry.ran += now.ranNanoseconds &- (then?.ranNanoseconds ?? 0)
                    entry.waited += now.waitedNanoseconds &- (then?.waitedNanoseconds ?? 0)
                    total.threads[now.name] = entry
                }
                totals[load.key] = total
                progress(
                    "round \(round), \(load.key) (\(load.databases.joined(separator: ", "))): \(Int(result.perSecond)) writes/s"
                )
            }
        }
        var fields: [(String, JSONValue)] = [
            ("first", .string(first)), ("second", .string(second)), ("window", .int(Int64(window))),
            ("writesPerConnection", .int(Int64(count))), ("rounds", .int(Int64(rounds))),
        ]
        var medians: [String: Double] = [:]
        for load in loads {
            guard let total = totals[load.key] else { continue }
            let median = Self.median(total.rates)
            medians[load.key] = median
            var members = [
                JSONMember("connections", .int(Int64(load.databases.count))),
                JSONMember("opsPerSecond", .double(median.rounded())),
                JSONMember("roundsOpsPerSecond", .array(total.rates.map { .double($0.rounded()) })),
                JSONMember(
                    "perConnectionOpsPerSecond",
                    .array(total.perDatabase.map { .array($0.map { .double($0.rounded()) }) })),
                JSONMember(
                    "generatorCPUMicrosPerWrite",
                    .double(Self.rounded(Double(total.generatorNanoseconds) / 1e3 / Double(max(1, total.writes))))),
            ]
            if serverPid != nil {
                let wall = Double(total.wallNanoseconds)
                let serverRan = total.threads.values.reduce(0) { $0 + $1.ran }
                members.append(
                    JSONMember(
                        "serverCPUMicrosPerWrite",
                        .double(Self.rounded(Double(serverRan) / 1e3 / Double(max(1, total.writes))))))
                // Cores kept busy by the server and the generator together (at most the machine's).
                members.append(
                    JSONMember(
                        "coresBusy", .double(Self.rounded(Double(serverRan + total.generatorNanoseconds) / wall))))
                let threads = total.threads.filter { Double($0.value.ran) >= wall / 100 }
                    .sorted { $0.value.ran > $1.value.ran }
                members.append(
                    JSONMember(
                        "threads",
                        .array(
                            threads.map { name, time in
                                .object([
                                    JSONMember("thread", .string(name)),
                                    JSONMember("ran", .double(Self.rounded(Double(time.ran) / wall))),
                                    JSONMember("waitedForCore", .double(Self.rounded(Double(time.waited) / wall))),
                                ])
                            })))
            }
            fields.append((load.key, .object(members)))
        }
        if let one = medians["one"], let two = medians["two"], one > 0 {
            fields.append(("twoOverOne", .double(Self.rounded(two / one))))
        }
        if let one = medians["one"], let same = medians["oneDatabaseTwoConnections"], one > 0 {
            fields.append(("twoConnectionsOverOne", .double(Self.rounded(same / one))))
        }
        report(scenario: "databases", target: .hearth, fields)
    }

    /// One lean run: a connection per entry of `load.databases`, each opened with `use`.
    private func run(_ load: Load, writesPerConnection: Int) throws -> LeanLoad.Result {
        let databases = load.databases
        let lean = LeanLoad(
            host: server.host == "localhost" ? "127.0.0.1" : server.host, port: server.port,
            connections: databases.count, window: window, count: writesPerConnection * databases.count,
            seconds: server.seconds,
            request: { c in Array(#"{"id":0,"op":"set","path":"/bench/db/c\#(c)","value":"xxx"}"#.utf8) + [0x0A] },
            greetingLines: 1,
            opening: { c in Array(#"{"op":"use","id":1,"db":"\#(databases[c])"}"#.utf8) + [0x0A] })
        return try lean.run()
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}
