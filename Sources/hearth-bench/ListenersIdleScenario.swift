import ArgumentParser

/// N idle connections on raw sockets, each listening to its own path, in either protocol: the
/// server's resident memory per connection.
struct ListenersIdleScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idle-raw",
        abstract: "N idle raw listeners (line protocol or Firebase's), one path each: the server's RSS per connection.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The listeners' protocol: line (--port) or firebase (--http-port).") var wire = ListenerWire.line
    @Option(help: "Hearth's HTTP port (Firebase listeners).") var httpPort = 9080
    @Option(help: "Connections to open, each with one listen.") var connections = 10_000
    @Option(help: "The server's process id, to read its RSS from /proc/<pid>/status.") var serverPid: Int32

    func run() throws {
        try server.checkLoopback()
        guard let rssBefore = residentBytes(pid: serverPid) else {
            throw ValidationError("cannot read /proc/\(serverPid)/status")
        }
        let fileLimit = raiseOpenFileLimit()
        let host = server.host == "localhost" ? "127.0.0.1" : server.host
        progress(
            "idle-raw (\(wire)): \(connections) listeners (open-file limit \(fileLimit)), at most \(server.seconds) s")
        var group = RawListeners(wire: wire)
        defer { group.close() }
        let deadline = server.deadline
        for i in 0..<connections where monotonicNanoseconds() < deadline {
            try group.open(host: host, port: wire == .firebase ? httpPort : server.port, path: "/idle/c\(i)")
            if (i + 1) % 2000 == 0 {
                try group.drain(quietMilliseconds: 1)
                progress("\(i + 1) open")
            }
        }
        try group.drain()
        let rssAfter = residentBytes(pid: serverPid) ?? 0
        let open = group.fds.count
        report(
            scenario: "idle-raw", target: server.target,
            [
                ("wire", .string(wire.rawValue)), ("connections", .int(Int64(open))),
                ("rssBeforeMiB", .double(mebibytes(rssBefore))), ("rssMiB", .double(mebibytes(rssAfter))),
                ("bytesPerConnection", .double(open > 0 ? Double(rssAfter - rssBefore) / Double(open) : 0)),
            ])
    }
}
