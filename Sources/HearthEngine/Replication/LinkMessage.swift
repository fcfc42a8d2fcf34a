import HearthJSON

/// What a replica's peer connection hears from its leader, handed to the engine in order.
package enum LinkMessage: Sendable {
    /// The leader took the `replicate`: `mode` is `stream` or `snapshot`, at the leader's `rev`,
    /// with its epoch history.
    case started(mode: String, rev: UInt64, epoch: UInt64, history: JSONValue, origin: String?)
    /// The replica's log forked from the leader's after `keepRev` (docs/cluster.md, "A node that comes back").
    case diverged(keepRev: UInt64)
    /// The leader refused (`reason`): the link closes and is retried.
    case refused(String)
    /// Committed records, one after the other: writes (decoded as they are read, so the engine
    /// only applies them) and onDisconnect changes, with their payloads' bytes as the leader
    /// logged them.
    case records(LinkRecords)
    /// A chunk of the snapshot at `rev` (`data` base64), or its end (`done`).
    case snapshotChunk(rev: UInt64, data: String?, done: Bool, confirmedRev: UInt64)
    /// Nothing new; the leader's confirmed revision.
    case heartbeat(confirmedRev: UInt64)
    /// The leader's rules document, in force on this node from now on.
    case rules(JSONValue)
    /// The leader's triggers' cursors, kept by the replica for when it leads.
    case triggerCursors(JSONValue)
    /// The answer to forwarded request `forward` (its members after `id`).
    case forwardAnswer(forward: UInt64, members: [JSONMember])
    /// The leader is shutting down: the link closes.
    case goaway
    /// The connection ended.
    case closed
}

/// A replica's connection to its leader as the engine sees it (the server's `ReplicaLink` is the
/// one over TCP): it sends lines, closes, and tells one link from the next. Its messages reach
/// the engine as `ClusterInput.link`.
package protocol LeaderLink: AnyObject, Sendable {
    /// Tells this link's messages apart from those of an earlier link.
    var id: UInt64 { get }
    /// The leader's address, as the link was opened to it.
    var leader: String { get }
    /// Whether the connection is up (lines sent before are queued until it is).
    var isReady: Bool { get }
    /// Sends one line (with its newline) to the leader; any thread.
    func send(_ line: [UInt8])
    /// Closes the connection (the link then delivers `.closed`).
    func close()
}
