public import HearthJSON

/// The answer of `Database.clusterStatus()`: the node's view of its cluster and every member.
public struct ClusterStatus: Sendable, Equatable {
    /// The answering node's cluster object (as in its hello).
    public let cluster: ClusterInfo?
    /// Every member, in the server's order.
    public let members: [ClusterMember]
    /// True while the cluster stays without a leader because no live member may lead without
    /// losing an acknowledged write (docs/cluster.md, "Operator runbook").
    public let noEligibleLeader: Bool
    /// `{"cluster":…,"members":[…]}` as the server sent them (what `hearth cluster status
    /// --json` prints).
    public let json: JSONValue

    init(response: JSONValue) {
        cluster = response["cluster"].flatMap(ClusterInfo.init(wire:))
        noEligibleLeader = response["cluster"]?["noEligibleLeader"] == .bool(true)
        let members: [JSONValue]
        if case .array(let list)? = response["members"] { members = list } else { members = [] }
        self.members = members.map(ClusterMember.init(wire:))
        json = .object([
            JSONMember("cluster", response["cluster"] ?? .null), JSONMember("members", .array(members)),
        ])
    }
}
