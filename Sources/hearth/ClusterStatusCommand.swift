import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth cluster status`: every member of the cluster, as a table or as JSON.
struct ClusterStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show every member of the cluster: role, state, epoch, rev and lag.",
        discussion: """
            Prints a table (node, role, state, epoch, rev, lag in revisions and milliseconds; the \
            node answering is marked *), or with --json the server's answer \
            {"cluster":{…},"members":[…]}. A server that is not part of a cluster fails with exit \
            status 1.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: #"Print {"cluster":{…},"members":[…]} as JSON instead of a table."#)
    var json = false

    func run() async throws {
        try await reportingFailures {
            let database = try await connection.connect()
            var status = try await connection.bounded("clusterStatus") { try await database.clusterStatus() }
            // Right after an election or a failover the members' own records (which the table
            // shows) lag the outcome by a moment: ask again for up to two seconds before
            // showing a cluster without a leader (the table then says an election is under way).
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(2)
            while !Self.hasLeader(status), !status.noEligibleLeader, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                status = try await connection.bounded("clusterStatus") { try await database.clusterStatus() }
            }
            let out = Output()
            out.append(json ? status.json.prettyJSONString + "\n" : Self.table(status))
            try out.flush()
        }
    }

    /// The members as aligned columns, one line each, under a header.
    static func table(_ status: ClusterStatus) -> String {
        let header = ["NODE", "ROLE", "STATE", "EPOCH", "REV", "LAG REVS", "LAG MS"]
        let rows = status.members.map { member -> [String] in
            let here = member.node == status.cluster?.node ? "*" : ""
            return [
                member.node + here, member.role.rawValue, member.state, text(member.epoch), text(member.rev),
                text(member.lagRevs), text(member.lagMs),
            ]
        }
        let table = TextTable.render([header] + rows)
        if status.noEligibleLeader {
            return table
                + "no member may lead without losing an acknowledged write: the cluster stays without a leader"
                + " (see the operator runbook in docs/cluster.md)\n"
        }
        guard hasLeader(status) else {
            return table + "no member leads yet: an election or a failover is under way (ask again in a moment)\n"
        }
        return table
    }

    /// Whether a member reports itself the leader.
    static func hasLeader(_ status: ClusterStatus) -> Bool {
        status.members.contains { $0.role == .leader }
    }

    private static func text(_ number: Int64?) -> String { number.map(String.init) ?? "-" }
}
