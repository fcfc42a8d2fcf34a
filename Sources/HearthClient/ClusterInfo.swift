public import HearthJSON

/// What a cluster node says about itself and its cluster, from its `hello` and its `cluster`
/// events (`Database.cluster`, `.info/cluster`): nil for a standalone server.
public struct ClusterInfo: Sendable, Equatable {
    /// A node's role in its cluster. A struct rather than an enum so that a role a newer server
    /// introduces is kept as it is instead of failing the whole object.
    public struct Role: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The node orders every write of the cluster.
        public static let leader = Role(rawValue: "leader")
        /// The node follows the leader's log and forwards writes to it.
        public static let replica = Role(rawValue: "replica")
        /// The node takes part in an election (there is no leader it knows of).
        public static let candidate = Role(rawValue: "candidate")

        public var description: String { rawValue }
    }

    /// The cluster's name (`cluster.name`).
    public let name: String
    /// The name of the node this client is connected to.
    public let node: String
    /// That node's role.
    public let role: Role
    /// The current leader's advertised TCP address, `host:port` (the form of
    /// `Database.connectedAddress`), or nil while the node knows of none (an election).
    public let leader: String?
    /// The current leadership's epoch as the node knows it: it grows with every new leader.
    public let epoch: Int64
    /// The node's last applied revision when it sent this (its hello or `cluster` event).
    public let rev: Int64
    /// The object as the server sent it.
    public let json: JSONValue

    /// The `cluster` object of a hello or `cluster` event; nil when it is not one (a standalone
    /// server sends none).
    init?(wire: JSONValue) {
        guard case .object = wire, let name = wire["name"]?.stringValue, let node = wire["node"]?.stringValue,
            let role = wire["role"]?.stringValue
        else { return nil }
        self.name = name
        self.node = node
        self.role = Role(rawValue: role)
        leader = wire["leader"]?.stringValue
        epoch = wire["epoch"]?.int64Value ?? 0
        rev = wire["rev"]?.int64Value ?? 0
        json = wire
    }
}
