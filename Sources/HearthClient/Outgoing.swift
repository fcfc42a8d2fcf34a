internal import HearthJSON

/// A request waiting to be sent or answered.
struct Outgoing {
    enum Kind {
        /// A user operation (read or write): kept across a disconnect and sent again, in order,
        /// on reconnect.
        case request
        /// Connection-scoped state (subscribe, unsubscribe, onDisconnect registration): dropped
        /// on disconnect, because the repo rebuilds that state on the next connection.
        case session
    }

    let kind: Kind
    /// The request's members, without `id`.
    let body: [JSONMember]
    /// The write's number (its write id's), for a write: `purgeOutstandingWrites` drops it.
    var writeNumber: UInt64?
    /// False for a request that must not be sent twice and carries no write id to make a
    /// second sending harmless (`failover`): when the connection drops before its answer it
    /// fails with `unavailable` ("outcome unknown") instead of being sent again.
    var resendable = true
    /// Connections in a row the server cut (`slow_consumer`) while this request waited for its
    /// answer: a read fails with the server's error at `Repo.cutsBeforeGivingUp`.
    var serverCuts = 0
    /// Called on the repo's event loop with the response (`ok: true`) or its error.
    let completion: (Result<JSONValue, HearthError>) -> Void

    /// The request line for id `id`, newline included.
    func line(id: Int64) -> [UInt8] {
        var bytes = JSONValue.object([JSONMember("id", .int(id))] + body).serialized
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}

/// A registered onDisconnect operation, replayed on every new connection.
struct OnDisconnectEntry {
    let id: Int
    /// The `onDisconnect` request's members, without `id`.
    let body: [JSONMember]
    /// The path the operation covers, for pruning entries it overrides.
    let path: [String]
    /// Whether it replaces everything at and below `path` (set, remove, cancel).
    let replacesSubtree: Bool
    /// The caller's completion, until the server first acknowledges the registration.
    var completion: (@Sendable (HearthError?) -> Void)?
}
