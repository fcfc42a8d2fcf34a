import ArgumentParser
import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// Many idle databases: a data directory holding `--databases` databases of `--nodes` leaves
/// each (filled through the line protocol first, unless it holds them already) against an empty
/// one, in interleaved rounds of a fresh server started by this command: the time from start to
/// the first accepted connection and hello, the server's resident memory once settled, and on
/// the full directory the latency of the first requests to databases that are closed (`use` and
/// a `get`, sent together on a new connection), each probe a different database.
struct IdleDatabasesScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idle-databases",
        abstract:
            "Start-up time, resident memory and first-request latency with many idle databases, against an empty server.",
        discussion: """
            Give hearthd's command line after `--`, without --port and --data-dir (this command adds \
            them), e.g. `hearth-bench idle-databases --port 9461 --data-dir /tmp/full --empty-data-dir \
            /tmp/empty -- hearthd --fsync never --config hearth.json`. The server must create \
            databases on first use (autoCreateDatabases) for the filling.
            """)

    @OptionGroup var server: ServerOptions
    @Option(help: "The data directory of many databases (filled first unless it holds them).") var dataDir: String
    @Option(help: "An empty data directory to compare with (created by the server).") var emptyDataDir: String
    @Option(help: "Databases in the full data directory, named idle-0000, idle-0001, …") var databases = 1000
    @Option(help: "Leaves written into each database.") var nodes = 1000
    @Option(help: "Closed databases probed per round (all different).") var probes = 50
    @Option(help: "Rounds; each starts the server once on each data directory.") var rounds = 3
    @Option(help: "Seconds to let the server settle before reading its resident memory.") var settle: Double = 1
    @Option(help: "A file to write the started server's pid into (for the caller's cleanup).") var pidFile: String?
    @Argument(parsing: .postTerminator, help: "hearthd's command line.") var command: [String] = []

    func validate() throws {
        guard databases > 0, databases <= 10_000, nodes > 0, probes > 0, rounds > 0 else {
            throw ValidationError("--databases (at most 10,000), --nodes, --probes and --rounds must be positive")
        }
        guard probes * rounds <= databases else {
            throw ValidationError("--probes × --rounds must not exceed --databases: every probe is a different one")
        }
        guard !command.isEmpty else { throw ValidationError("give hearthd's command line after --") }
    }

    static func name(_ i: Int) -> String {
        let digits = String(i)
        return "idle-" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    func run() throws {
        try server.checkLoopback()
        let deadline = server.deadline
        progress(
            "idle-databases: \(databases) databases of \(nodes) leaves, \(rounds) rounds, at most \(server.seconds) s")
        var fillSeconds: Double?
        if access("\(dataDir)/databases/\(Self.name(databases - 1))", F_OK) != 0 {
            fillSeconds = try fill(deadline: deadline)
        } else {
            progress("\(dataDir) holds the databases already")
        }
        var startup: [String: [Double]] = ["empty": [], "full": []]
        var resident: [String: [Double]] = ["empty": [], "full": []]
        var afterProbes: [Double] = []
        var useLatency = latencyHistogram()
        var firstRequestLatency = latencyHistogram()
        var roundFirstRequest: [[(String, JSONValue)]] = []
        for round in 1...rounds {
            let order = round % 2 == 1 ? ["empty", "full"] : ["full", "empty"]
            for side in order {
                guard monotonicNanoseconds() < deadline else { throw ValidationError("out of time (--seconds)") }
                let directory = side == "full" ? dataDir : emptyDataDir
                let started = monotonicNanoseconds()
                let child = try ChildProcess.spawn(
                    command + ["--port", String(server.port), "--data-dir", directory], pidFile: pidFile)
                defer { child.stop() }
                let hello = try child.waitForHello(host: server.host, port: server.port, seconds: 60)
                let startMs = Double(monotonicNanoseconds() - started) / 1e6
                hello.close()
                usleep(UInt32(settle * 1e6))
                let rss = mebibytes(residentBytes(pid: child.pid) ?? 0)
                startup[side, default: []].append(startMs)
                resident[side, default: []].append(rss)
                var line = "round \(round), \(side): accepting after \(Self.rounded(startMs)) ms, RSS \(rss) MiB"
                if side == "full" {
                    var histogram = latencyHistogram()
                    for j in 0..<probes {
                        // Different databases in every round, spread over the names.
                        let index = (j * (databases / probes) + round - 1) % databases
                        let (use, first) = try probe(Self.name(index))
                        _ = useLatency.record(use)
                        _ = firstRequestLatency.record(first)
                        _ = histogram.record(first)
                    }
                    let rssAfter = mebibytes(residentBytes(pid: child.pid) ?? 0)
                    afterProbes.append(rssAfter)
                    roundFirstRequest.append(latencyFields(histogram))
                    line +=
                        "; first request to a closed database p50 \(Double(histogram.valueAtPercentile(50)) / 1e6) ms, max \(Double(histogram.max) / 1e6) ms; RSS after \(probes) probes \(rssAfter) MiB"
                }
                progress(line)
            }
        }
        let emptyStart = DatabasesScenario.median(startup["empty"] ?? [])
        let fullStart = DatabasesScenario.median(startup["full"] ?? [])
        let emptyRSS = DatabasesScenario.median(resident["empty"] ?? [])
        let fullRSS = DatabasesScenario.median(resident["full"] ?? [])
        func doubles(_ values: [Double]) -> JSONValue { .array(values.map { .double(Self.rounded($0)) }) }
        var fields: [(String, JSONValue)] = [
            ("databases", .int(Int64(databases))), ("nodes", .int(Int64(nodes))), ("rounds", .int(Int64(rounds))),
            ("startupMsEmpty", .double(Self.rounded(emptyStart))), ("startupMsFull", .double(Self.rounded(fullStart))),
            ("startupMsExtra", .double(Self.rounded(fullStart - emptyStart))),
            ("rssMiBEmpty", .double(emptyRSS)), ("rssMiBFull", .double(fullRSS)),
            ("rssMiBExtra", .double(Self.rounded(fullRSS - emptyRSS))),
            ("roundsStartupMsEmpty", doubles(startup["empty"] ?? [])),
            ("roundsStartupMsFull", doubles(startup["full"] ?? [])),
            ("roundsRssMiBEmpty", doubles(resident["empty"] ?? [])),
            ("roundsRssMiBFull", doubles(resident["full"] ?? [])),
            ("rssMiBAfterProbes", doubles(afterProbes)),
            ("probes", .int(Int64(firstRequestLatency.totalCount))),
        ]
        if let fillSeconds { fields.append(("fillSeconds", .double(Self.rounded(fillSeconds)))) }
        fields.append(("firstRequest", .object(latencyFields(firstRequestLatency).map { JSONMember($0.0, $0.1) })))
        fields.append(("useAnswer", .object(latencyFields(useLatency).map { JSONMember($0.0, $0.1) })))
        fields.append(
            ("roundsFirstRequest", .array(roundFirstRequest.map { .object($0.map { JSONMember($0.0, $0.1) }) })))
        report(scenario: "idle-databases", target: .hearth, fields)
    }

    /// Starts the server on the full data directory and writes `nodes` leaves into each database
    /// through a connection that chooses it with `use`; returns the seconds it took.
    private func fill(deadline: UInt64) throws -> Double {
        progress("filling \(dataDir): \(databases) databases of \(nodes) leaves…")
        let child = try ChildProcess.spawn(
            command + ["--port", String(server.port), "--data-dir", dataDir], pidFile: pidFile)
        defer { child.stop() }
        try child.waitForHello(host: server.host, port: server.port, seconds: 60).close()
        let started = monotonicNanoseconds()
        var values = #"{"op":"update","id":2,"path":"/items","values":{"#
        for i in 0..<nodes { values += (i == 0 ? "" : ",") + #""\#(leafKey(i))":\#(i)"# }
        values += "}}"
        for i in 0..<databases {
            guard monotonicNanoseconds() < deadline else {
                throw ValidationError("out of time (--seconds) while filling")
            }
            guard var socket = try LineSocket.connect(host: server.host, port: server.port) else {
                throw ValidationError("the server refused a connection while filling")
            }
            defer { socket.close() }
            _ = try socket.readLine()
            try socket.send(line: #"{"op":"use","id":1,"db":"\#(Self.name(i))"}"# + "\n" + values)
            try socket.expectOK()
            try socket.expectOK()
            if (i + 1) % 100 == 0 { progress("\(i + 1) databases filled") }
        }
        return Double(monotonicNanoseconds() - started) / 1e9
    }

    /// A new connection to the server, then `use` of database `name` and a `get` of one of its
    /// leaves, sent together: nanoseconds from sending them to the `use` answer and to the
    /// `get` answer.
    private func probe(_ name: String) throws -> (use: UInt64, first: UInt64) {
        guard var socket = try LineSocket.connect(host: server.host, port: server.port) else {
            throw ValidationError("the server refused a connection")
        }
        defer { socket.close() }
        _ = try socket.readLine()
        let sent = monotonicNanoseconds()
        try socket.send(
            line: #"{"op":"use","id":1,"db":"\#(name)"}"# + "\n"
                + #"{"op":"get","id":2,"path":"/items/\#(leafKey(0))"}"#
        )
        try socket.expectOK()
        let used = monotonicNanoseconds()
        let answer = try socket.readLine()
        let answered = monotonicNanoseconds()
        guard answer.contains(#""ok":true"#), answer.contains(#""value":0"#) else {
            throw ValidationError("database \(name): unexpected answer \(answer)")
        }
        return (used - sent, answered - sent)
    }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}
