import ArgumentParser

/// Writes with the lean generator (`LeanLoad`): the load a cheap C client would put on either
/// server, to check the main generator against `redis-benchmark` and compare the servers.
struct LeanScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lean",
        abstract: "Writes from one thread on raw sockets (set / SET), as redis-benchmark -t set sends them.")

    @OptionGroup var server: ServerOptions
    @Option(help: "Connections.") var connections = 50
    @Option(help: "Requests per window per connection (redis-benchmark -P); 1 is unpipelined.") var window = 1
    @Option(help: "Requests in all.") var count = 200_000
    @Option(help: "Value bytes (redis-benchmark -d).") var valueBytes = 3
    @Flag(
        help: "Speak Firebase's realtime protocol over WebSocket (--target hearth, --port the HTTP port): put requests."
    )
    var firebase = false

    func validate() throws {
        guard connections > 0, window > 0, count > 0, valueBytes > 0 else {
            throw ValidationError("--connections, --window, --count and --value-bytes must be positive")
        }
        guard server.tlsCA == nil else { throw ValidationError("lean speaks plain TCP only") }
        guard server.target == .hearth || server.target == .redis else {
            throw ValidationError("lean drives hearth (line protocol) or redis (RESP)")
        }
    }

    func run() throws {
        try server.checkLoopback()
        let value = String(repeating: "x", count: valueBytes)
        let target = server.target
        let token = server.token
        let firebase = self.firebase
        let host = server.host == "localhost" ? "127.0.0.1" : server.host
        let port = server.port
        var load = LeanLoad(
            host: server.host == "localhost" ? "127.0.0.1" : server.host, port: server.port,
            connections: connections, window: window, count: count, seconds: server.seconds,
            request: { c in
                switch target {
                case .hearth where firebase:
                    return FirebaseWireSocket.request("p", body: #"{"p":"/bench/lean/c\#(c)","d":"\#(value)"}"#)
                case .hearth:
                    return Array(#"{"id":0,"op":"set","path":"/bench/lean/c\#(c)","value":"\#(value)"}"#.utf8) + [0x0A]
                default:
                    let key = "key:c\(c)"
                    return Array(
                        "*3\r\n$3\r\nSET\r\n$\(key.utf8.count)\r\n\(key)\r\n$\(value.utf8.count)\r\n\(value)\r\n".utf8)
                }
            },
            greetingLines: target == .hearth && !firebase ? 1 : 0)
        if firebase {
            guard target == .hearth else { throw ValidationError("--firebase is for --target hearth") }
            load.answers = .webSocketFrames
            load.upgrade = { try FirebaseWireSocket.upgrade($0, host: host, port: port) }
        }
        guard token == nil else { throw ValidationError("lean sends no auth; run the server in open mode") }
        progress("lean: \(count) writes, \(connections) connections, window \(window), at most \(server.seconds) s")
        let result = try load.run()
        report(
            scenario: firebase ? "lean-firebase" : "lean", target: target,
            [
                ("connections", .int(Int64(connections))), ("window", .int(Int64(window))),
                ("writes", .int(Int64(result.requests))), ("seconds", .double(result.seconds)),
                ("opsPerSecond", .double(result.perSecond)),
            ])
    }
}
