import ArgumentParser
import Glibc

/// One line-protocol writer, K listeners of one path on raw sockets speaking either protocol:
/// events delivered per second, so that Firebase's protocol and the line protocol deliver the
/// same writes to the same number of listeners through the same generator.
struct ListenersFanoutScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout-raw",
        abstract: "1 writer → K raw listeners (line protocol or Firebase's) of one path (events delivered/s).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The listeners' protocol: line (--port) or firebase (--http-port).") var wire = ListenerWire.line
    @Option(help: "Hearth's HTTP port (Firebase listeners).") var httpPort = 9080
    @Option(help: "Listener connections.") var listeners = 100
    @Option(help: "Writes.") var writes = 20_000
    @Option(help: "Writes in flight per window.") var window = 200

    func validate() throws {
        guard listeners > 0, writes > 0, window > 0 else {
            throw ValidationError("--listeners, --writes and --window must be positive")
        }
        guard server.target == .hearth, server.tlsCA == nil else {
            throw ValidationError("fanout-raw drives Hearth over plain TCP")
        }
    }

    func run() throws {
        try server.checkLoopback()
        let host = server.host == "localhost" ? "127.0.0.1" : server.host
        var group = RawListeners(wire: wire)
        defer { group.close() }
        for _ in 0..<listeners {
            try group.open(host: host, port: wire == .firebase ? httpPort : server.port, path: "/fan")
        }
        guard var writer = try LineSocket.connect(host: host, port: server.port) else {
            throw ValidationError("nothing listens on \(host):\(server.port)")
        }
        defer { Glibc.close(writer.fd) }
        _ = try writer.readLine()  // hello
        try group.drain()
        progress("fanout-raw (\(wire)): \(writes) writes to \(listeners) listeners, at most \(server.seconds) s")
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var sent = 0
        var delivered = 0
        while monotonicNanoseconds() < deadline {
            if sent < writes, delivered >= (sent - window) * listeners {
                // The next window, once the one before the last has reached every listener.
                var lines: [UInt8] = []
                for i in sent..<min(writes, sent + window) {
                    lines += Array(#"{"id":0,"op":"set","path":"/fan","value":\#(i)}"#.utf8) + [0x0A]
                }
                try writer.send(lines)
                for _ in sent..<min(writes, sent + window) { _ = try writer.readLine() }
                sent = min(writes, sent + window)
            }
            delivered += try group.read(timeoutMilliseconds: 10, buffer: &buffer)
            if sent == writes, delivered >= writes * listeners { break }
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        report(
            scenario: "fanout-raw", target: server.target,
            [
                ("wire", .string(wire.rawValue)), ("listeners", .int(Int64(listeners))),
                ("writes", .int(Int64(sent))), ("eventsExpected", .int(Int64(writes * listeners))),
                ("eventsDelivered", .int(Int64(delivered))), ("seconds", .double(elapsed)),
                ("eventsPerSecond", .double(Double(delivered) / elapsed)),
            ])
    }
}
