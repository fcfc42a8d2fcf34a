import HearthJSON

/// The current leader as its `leader` key says: `{"node","tcp","http"}`.
public struct LeaderInfo: Sendable, Equatable {
    /// The leader's node name.
    public var node: String
    /// The leader's advertised TCP `host:port`.
    public var tcp: String
    /// The leader's advertised HTTP `host:port`, when it has an HTTP listener.
    public var http: String?

    /// A leader key's value.
    public init(node: String, tcp: String, http: String?) {
        self.node = node
        self.tcp = tcp
        self.http = http
    }

    var json: JSONValue {
        .object(["node": .string(node), "tcp": .string(tcp), "http": http.map { .string($0) } ?? .null])
    }

    init?(json: JSONValue) {
        guard let node = json["node"]?.stringValue, let tcp = json["tcp"]?.stringValue else { return nil }
        self.init(node: node, tcp: tcp, http: json["http"]?.stringValue)
    }
}

/// What this node knows of the cluster at one moment; `ClusterCoordinator` hands a new one to its
/// `onChange` whenever the role, the leader, the epoch or the member list changes.
public struct ClusterView: Sendable, Equatable {
    /// This node's name.
    public var node: String
    /// This node's role.
    public var role: ClusterRole
    /// This node's state as its member key says it.
    public var state: MemberState
    /// The current (or, while there is no leader, the last known) leadership's epoch; 0 before any.
    public var epoch: UInt64
    /// The current leader, or nil while there is none.
    public var leader: LeaderInfo?
    /// Every live member, this node included once registered, by node name.
    public var members: [MemberInfo]
    /// True while there is no leader and, under `syncReplicas ≥ 1`, no member may become one
    /// without losing an acknowledged write: the cluster stays read-only.
    public var noEligibleLeader: Bool
    /// How many leaderships (distinct epochs) this node has seen since it started.
    public var electionsSeen: Int

    /// A view with every field given.
    public init(
        node: String, role: ClusterRole, state: MemberState, epoch: UInt64, leader: LeaderInfo?, members: [MemberInfo],
        noEligibleLeader: Bool, electionsSeen: Int
    ) {
        self.node = node
        self.role = role
        self.state = state
        self.epoch = epoch
        self.leader = leader
        self.members = members
        self.noEligibleLeader = noEligibleLeader
        self.electionsSeen = electionsSeen
    }
}
