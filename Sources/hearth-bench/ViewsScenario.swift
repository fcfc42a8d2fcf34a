import ArgumentParser

/// V distinct views under one parent; a writer touches one of them at a time, raising one event.
/// Hearth only: Redis has no views.
struct ViewsScenario: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "views", abstract: "Write cost with V distinct views under one parent (ops/s; Hearth only).")

    @OptionGroup var server: ServerOptions
    @Option(help: "Distinct views (subscriptions at /rooms/r<i>).") var views = 10_000
    @Option(help: "Writes.") var writes = 100_000
    @Option(
        help: """
            Rooms /rooms/r<i>, each written once before timing (default: --views), so that runs \
            with different numbers of views can share the parent's width.
            """)
    var rooms: Int?

    func validate() throws {
        guard server.target == .hearth else { throw ValidationError("views measures Hearth only") }
        guard views > 0, writes > 0 else { throw ValidationError("--views and --writes must be positive") }
        guard (rooms ?? views) >= views else { throw ValidationError("--rooms must be at least --views") }
    }

    func run() async throws {
        try server.checkLoopback()
        let subscriber = try await server.connect()
        var i = 0
        while i < views {
            try await subscriber.send((i..<min(views, i + 1000)).map { .subscribe(key: ["rooms", "r\($0)"]) }).get()
            i = min(views, i + 1000)
        }
        let writer = try await server.connect()
        let rooms = self.rooms ?? views
        var room = 0
        while room < rooms {
            try await writer.send(
                (room..<min(rooms, room + 1000)).map { .set(key: ["rooms", "r\($0)", "last"], value: -1) }
            ).get()
            room = min(rooms, room + 1000)
        }
        progress("views: \(views) views, \(writes) writes each touching one, at most \(server.seconds) s")
        let deadline = server.deadline
        let start = monotonicNanoseconds()
        var sent = 0
        var rng = SystemRandomNumberGenerator()
        while sent < writes, monotonicNanoseconds() < deadline {
            let requests = (sent..<min(writes, sent + 1000)).map {
                BenchRequest.set(key: ["rooms", "r\(Int.random(in: 0..<views, using: &rng))", "last"], value: $0)
            }
            try await writer.send(requests).get()
            sent += requests.count
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        await subscriber.close()
        await writer.close()
        report(
            scenario: "views", target: .hearth,
            [
                ("views", .int(Int64(views))), ("rooms", .int(Int64(rooms))), ("writes", .int(Int64(sent))),
                ("seconds", .double(elapsed)),
                ("opsPerSecond", .double(Double(sent) / elapsed)),
            ])
    }
}
