public import HearthJSON

/// One member of a cluster as `Database.clusterStatus()` reports it.
public struct ClusterMember: Sendable, Equatable {
    /// The node's name.
    public let node: String
    /// Where clients and peers reach its TCP listener, `host:port`.
    public let tcp: String?
    /// Where its HTTP listener is, `host:port`, when it has one.
    public let http: String?
    /// Its role (`leader`, `replica`, `candidate`).
    public let role: ClusterInfo.Role
    /// The leadership epoch it follows.
    public let epoch: Int64?
    /// The last revision in its log.
    public let rev: Int64?
    /// The epoch of that last record.
    public let lastEpoch: Int64?
    /// `catching_up`, `streaming`, `leader`, `stepping_down` or `candidate`.
    public let state: String
    /// How many revisions it is behind the leader (nil when the server does not say).
    public let lagRevs: Int64?
    /// How far behind the leader it is, in milliseconds (nil when the server does not say).
    public let lagMs: Int64?
    /// The member object as the server sent it.
    public let json: JSONValue

    init(wire: JSONValue) {
        node = wire["node"]?.stringValue ?? "?"
        tcp = wire["tcp"]?.stringValue
        http = wire["http"]?.stringValue
        role = ClusterInfo.Role(rawValue: wire["role"]?.stringValue ?? "unknown")
        epoch = wire["epoch"]?.int64Value
        rev = wire["rev"]?.int64Value
        lastEpoch = wire["lastEpoch"]?.int64Value
        state = wire["state"]?.stringValue ?? "unknown"
        lagRevs = wire["lagRevs"]?.int64Value
        lagMs = wire["lagMs"]?.int64Value
        json = wire
    }
}
