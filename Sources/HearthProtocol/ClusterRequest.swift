import HearthCore
public import HearthJSON

/// The requests of a cluster (docs/PROTOCOL.md, "Cluster"; docs/cluster.md): those peers
/// send each other, on a connection authenticated with the cluster secret, and the operator's
/// `clusterStatus` and `failover`.
public enum ClusterRequest: Sendable {
    /// A replica asks to follow the leader from `fromRev`, with its epoch history
    /// (`[[epoch, firstRev], …]`, as JSON: the server checks it) and its log's origin.
    case replicate(node: String, fromRev: UInt64, history: JSONValue, origin: String?)
    /// A replica holds every record up to `rev` durably.
    case replicaAck(rev: UInt64)
    /// A request a replica's client sent, to run on the leader as that client (`identity`, in the
    /// log's identity encoding; null: unauthenticated). `stored`: answer with the stored value
    /// (the HTTP API's writes). `owner`: the client's connection, `<node>/<session>`, for
    /// onDisconnect registrations.
    case forward(identity: JSONValue, stored: Bool, owner: String?, request: Request)
    /// A replica's client connection ended: run the onDisconnect queue of `owner`.
    case disconnected(owner: String)
    /// This node's view of the cluster and its members (`hearth cluster status`).
    case status
    /// Hand leadership to `to` (or the most up-to-date replica) without losing a write.
    case failover(to: String?)

    /// The op's name.
    public var name: String {
        switch self {
        case .replicate: return "replicate"
        case .replicaAck: return "replicaAck"
        case .forward: return "forward"
        case .disconnected: return "disconnected"
        case .status: return "clusterStatus"
        case .failover: return "failover"
        }
    }
}

extension RequestDecoder {
    /// The cluster op `name`, or nil when `name` is not one.
    func clusterOperation(_ name: String, _ fields: Fields) throws(DatabaseError) -> Operation? {
        switch name {
        case "replicate":
            guard let node = try fields.string(.node), !node.isEmpty else {
                throw DatabaseError(.badRequest, "field \"node\" must be the replica's node name")
            }
            return .cluster(
                .replicate(
                    node: node, fromRev: try revision(fields, .fromRev), history: fields[.history] ?? .array([]),
                    origin: try fields.string(.origin)))
        case "replicaAck":
            return .cluster(.replicaAck(rev: try revision(fields, .rev)))
        case "forward":
            let inner = try fields.required(.request)
            guard case .object = inner else {
                throw DatabaseError(.badRequest, "field \"request\" must be a request object")
            }
            let request: Request
            switch self.request(from: inner) {
            case .success(let decoded): request = decoded
            case .failure(let failure): throw failure.error
            }
            return .cluster(
                .forward(
                    identity: fields[.auth] ?? .null, stored: try fields.bool(.stored) ?? false,
                    owner: try fields.string(.owner), request: request))
        case "disconnected":
            guard let owner = try fields.string(.owner), !owner.isEmpty else {
                throw DatabaseError(.badRequest, "field \"owner\" must name a connection")
            }
            return .cluster(.disconnected(owner: owner))
        case "clusterStatus":
            return .cluster(.status)
        case "failover":
            return .cluster(.failover(to: try fields.string(.to)))
        default:
            return nil
        }
    }

    private func revision(_ fields: Fields, _ field: RequestField) throws(DatabaseError) -> UInt64 {
        guard let value = fields[field]?.int64Value, value >= 0 else {
            throw DatabaseError(.badRequest, "field \"\(field.rawValue)\" must be a revision (an integer ≥ 0)")
        }
        return UInt64(value)
    }
}
