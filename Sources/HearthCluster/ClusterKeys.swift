import HearthJSON

/// The etcd key layout of one cluster (docs/cluster.md, "etcd layout"), all under `/hearth/<name>/`.
struct ClusterKeys: Sendable {
    let prefix: String

    init(name: String) {
        prefix = "/hearth/\(name)/"
    }

    /// `{"node","tcp","http"}` under the leader's lease; its create revision is the epoch.
    var leader: String { prefix + "leader" }
    /// A switchover's notice, `{"from","to"}`, under a short lease: while it lives only `to`
    /// campaigns (anyone but `from` when `to` is null).
    var failover: String { prefix + "failover" }
    var membersPrefix: String { prefix + "members/" }

    func member(_ node: String) -> String { membersPrefix + node }

    /// The node a member key is about, when `key` is one.
    func memberNode(_ key: String) -> String? {
        guard key.utf8.starts(with: membersPrefix.utf8) else { return nil }
        return String(key.dropFirst(membersPrefix.count))
    }
}

/// A switchover in progress: the resigning leader and the node it hands over to.
struct FailoverNotice: Sendable, Equatable {
    var from: String
    var to: String?

    var json: JSONValue {
        .object(["from": .string(from), "to": to.map { .string($0) } ?? .null])
    }

    init(from: String, to: String?) {
        self.from = from
        self.to = to
    }

    init?(json: JSONValue) {
        guard let from = json["from"]?.stringValue else { return nil }
        self.init(from: from, to: json["to"]?.stringValue)
    }

    /// Whether `node` may campaign while this notice lives.
    func allowsCampaign(by node: String) -> Bool {
        if let to { return node == to }
        return node != from
    }
}
