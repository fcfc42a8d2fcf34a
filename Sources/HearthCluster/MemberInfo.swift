import HearthJSON

/// One node as its `members/<node>` key describes it (docs/cluster.md, "etcd layout").
public struct MemberInfo: Sendable, Equatable {
    /// The node's name (the key's last segment).
    public var node: String
    /// The advertised TCP `host:port`.
    public var tcp: String
    /// The advertised HTTP `host:port`, when the node has an HTTP listener.
    public var http: String?
    /// The node's role as it last wrote it.
    public var role: ClusterRole
    /// The current leadership's epoch as the node knows it (0 before any).
    public var epoch: UInt64
    /// The last rev in the node's log.
    public var rev: UInt64
    /// The epoch of the node's last record.
    public var lastEpoch: UInt64
    /// The node's state as it last wrote it.
    public var state: MemberState
    /// The highest rev whose acknowledgement the node released, on a leader's key.
    public var confirmedRev: UInt64?

    /// A member key's fields.
    public init(
        node: String, tcp: String, http: String?, role: ClusterRole, epoch: UInt64, rev: UInt64, lastEpoch: UInt64,
        state: MemberState, confirmedRev: UInt64?
    ) {
        self.node = node
        self.tcp = tcp
        self.http = http
        self.role = role
        self.epoch = epoch
        self.rev = rev
        self.lastEpoch = lastEpoch
        self.state = state
        self.confirmedRev = confirmedRev
    }

    /// The member key's value.
    public var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("node", .string(node)), JSONMember("tcp", .string(tcp)),
            JSONMember("http", http.map { .string($0) } ?? .null), JSONMember("role", .string(role.rawValue)),
            JSONMember("epoch", Self.number(epoch)), JSONMember("rev", Self.number(rev)),
            JSONMember("lastEpoch", Self.number(lastEpoch)), JSONMember("state", .string(state.rawValue)),
        ]
        if let confirmedRev { members.append(JSONMember("confirmedRev", Self.number(confirmedRev))) }
        return .object(members)
    }

    /// Reads a member key's value; nil when it is not one.
    init?(json: JSONValue) {
        guard let node = json["node"]?.stringValue, let tcp = json["tcp"]?.stringValue,
            let role = json["role"]?.stringValue.flatMap(ClusterRole.init(rawValue:)),
            let epoch = Self.unsigned(json["epoch"]), let rev = Self.unsigned(json["rev"]),
            let lastEpoch = Self.unsigned(json["lastEpoch"]),
            let state = json["state"]?.stringValue.flatMap(MemberState.init(rawValue:))
        else { return nil }
        let http: String?
        switch json["http"] {
        case nil, .null?: http = nil
        case .string(let text)?: http = text
        default: return nil
        }
        var confirmedRev: UInt64?
        if let value = json["confirmedRev"], value != .null {
            guard let confirmed = Self.unsigned(value) else { return nil }
            confirmedRev = confirmed
        }
        self.init(
            node: node, tcp: tcp, http: http, role: role, epoch: epoch, rev: rev, lastEpoch: lastEpoch, state: state,
            confirmedRev: confirmedRev)
    }

    private static func number(_ value: UInt64) -> JSONValue {
        .int(Int64(clamping: value))
    }

    private static func unsigned(_ value: JSONValue?) -> UInt64? {
        guard let int = value?.int64Value, int >= 0 else { return nil }
        return UInt64(int)
    }
}
