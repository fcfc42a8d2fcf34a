import ArgumentParser

/// `hearth cluster status|failover`: the members of a replicated cluster, and switchovers.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster", abstract: "Show a cluster's members and hand its leadership over.",
        discussion: """
            Any node's address will do (--url hearth://h1:9000,h2:9000 tries them in order). Both \
            commands need an admin connection on a server with rules: --token (or $HEARTH_TOKEN) \
            with one of the server's admin secrets.
            """,
        subcommands: [ClusterStatusCommand.self, ClusterFailoverCommand.self])
}
