import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth ping`: one round trip to the server.
struct PingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping", abstract: #"Measure one round trip; prints {"ms":…,"serverTime":…}."#)

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let clock = ContinuousClock()
            let start = clock.now
            let serverTime = try await connection.bounded("ping") { try await database.ping() }
            let elapsed = start.duration(to: clock.now)
            let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            try Output.line(.object(["ms": .double((ms * 1000).rounded() / 1000), "serverTime": .int(serverTime)]))
        }
    }
}
