import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth cluster failover`: hands the leadership to another node and waits until it leads.
struct ClusterFailoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failover", abstract: "Hand the cluster's leadership to another node (admin).",
        discussion: """
            The leader stops accepting writes, waits until the target holds every record, and \
            steps down; the target takes over. Prints {"leader":…,"epoch":…} once it leads (exit \
            0), or the server's reason when it did not within the cluster's syncTimeoutMs (exit \
            1). Raise --timeout when syncTimeoutMs is longer than it.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "The node to lead (default: the server's choice of an up-to-date replica).")
    var to: String?

    func validate() throws {
        if let to, to.isEmpty { throw ValidationError("--to needs a node name") }
    }

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            let target = to
            let result: FailoverResult
            do {
                result = try await connection.bounded("failover") { try await database.failover(to: target) }
            } catch let error as HearthError {
                throw CLIFailure.failed("failover failed: \(ConnectionOptions.describe(error))")
            }
            try Output.line(.object(["leader": .string(result.leader), "epoch": .int(result.epoch)]))
            writeError("hearth: \(result.leader) leads the cluster now (epoch \(result.epoch))")
        }
    }
}
