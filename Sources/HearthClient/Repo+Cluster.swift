internal import HearthJSON

extension Repo {
    // MARK: The connected node's cluster (on the loop)

    /// Handles `{"event":"cluster","cluster":{…}}`: the node's role, leader or epoch changed.
    /// `Database.cluster` and `.info/cluster` show the new object.
    func clusterChanged(_ wire: JSONValue) {
        guard let cluster = ClusterInfo(wire: wire) else {
            logger.debug("an unreadable cluster event", metadata: ["cluster": "\(wire.jsonString)"])
            return
        }
        logger.debug(
            "cluster changed",
            metadata: [
                "node": "\(cluster.node)", "role": "\(cluster.role)", "leader": "\(cluster.leader ?? "none")",
                "epoch": "\(cluster.epoch)",
            ])
        shared.withLockedValue { $0.cluster = cluster }
        setInfo(connected: isConnected, serverTimeOffset: shared.withLockedValue { $0.serverTimeOffset })
    }
}
