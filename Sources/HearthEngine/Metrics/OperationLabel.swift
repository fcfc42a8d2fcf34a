import HearthProtocol

/// The `op` label of the request metrics: one value per wire operation, plus `rejected` for lines a
/// connection answered itself before the engine saw them (undecodable, too large, over the write
/// rate limit). A small closed set, so that each label value has its counter made once, up front.
public enum OperationLabel: Int, Sendable, CaseIterable {
    case get, set, update, remove, setPriority, transaction, push, subscribe, stream, unsubscribe
    case onDisconnect, ping, auth, unauth, setRules, getRules, simulate, cluster, database, rejected

    /// The request's operation as the wire names it.
    init(_ operation: HearthProtocol.Operation) {
        switch operation {
        case .get: self = .get
        case .write(_, kind: .set): self = .set
        case .write(_, kind: .update): self = .update
        case .write(_, kind: .remove): self = .remove
        case .write(_, kind: .setPriority): self = .setPriority
        case .write(_, kind: .transaction): self = .transaction
        case .push: self = .push
        case .subscribe: self = .subscribe
        case .stream: self = .stream
        case .unsubscribe: self = .unsubscribe
        case .onDisconnect: self = .onDisconnect
        case .ping: self = .ping
        case .auth(.signOut): self = .unauth
        case .auth: self = .auth
        case .setRules: self = .setRules
        case .getRules: self = .getRules
        case .simulate: self = .simulate
        case .cluster: self = .cluster
        case .database: self = .database
        }
    }

    /// The label value (the wire name of the op).
    public var name: String {
        switch self {
        case .get: return "get"
        case .set: return "set"
        case .update: return "update"
        case .remove: return "remove"
        case .setPriority: return "setPriority"
        case .transaction: return "transaction"
        case .push: return "push"
        case .subscribe: return "subscribe"
        case .stream: return "stream"
        case .unsubscribe: return "unsubscribe"
        case .onDisconnect: return "onDisconnect"
        case .ping: return "ping"
        case .auth: return "auth"
        case .unauth: return "unauth"
        case .setRules: return "setRules"
        case .getRules: return "getRules"
        case .simulate: return "simulate"
        case .cluster: return "cluster"
        case .database: return "database"
        case .rejected: return "rejected"
        }
    }
}
