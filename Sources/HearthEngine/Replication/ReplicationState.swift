import HearthCluster
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import NIOCore

/// This node's place in the cluster as the engine sees it (docs/PROTOCOL.md, "The cluster object").
package enum EngineRole: Sendable, Equatable {
    /// Not clustered: the standalone server.
    case standalone
    /// Orders writes under leadership `epoch`.
    case leader(epoch: UInt64)
    /// Follows the leader at `leader` (its advertised TCP address; nil while none is known).
    case replica(leader: String?, epoch: UInt64)
    /// Campaigning, or without a leader.
    case candidate(epoch: UInt64)

    package var isLeader: Bool {
        if case .leader = self { return true }
        return false
    }

    /// Whether this node applies writes itself (standalone or leader).
    var appliesWrites: Bool {
        switch self {
        case .standalone, .leader: return true
        case .replica, .candidate: return false
        }
    }

    package var epoch: UInt64 {
        switch self {
        case .standalone: return 0
        case .leader(let epoch), .replica(_, let epoch), .candidate(let epoch): return epoch
        }
    }

    package var name: String {
        switch self {
        case .standalone: return "standalone"
        case .leader: return "leader"
        case .replica: return "replica"
        case .candidate: return "candidate"
        }
    }
}

/// A node's position as last published (role, revision, member state, confirmed revision).
struct PublishedPosition: Equatable {
    let role: EngineRole
    let rev: UInt64
    let state: MemberState
    let confirmedRev: UInt64
}

/// One replica following this leader over a peer connection.
struct ReplicaStream {
    let session: SessionLink
    let node: String
    /// The last revision it acknowledged as durable.
    var ackedRev: UInt64
    /// When it last acknowledged (ms), for its lag.
    var ackedAt: Int64
    /// When something was last sent (ms), for heartbeats.
    var sentAt: Int64
}

/// A client request a replica forwarded to its leader, waiting for the answer.
struct ForwardedRequest {
    let session: SessionLink
    let request: Request
    /// When it was first sent (ms): it fails with `unavailable` after `syncTimeoutMs`.
    let sentAt: Int64
}

/// The engine's replication state (engine thread only). Empty, and never consulted on a hot
/// path, on a standalone server.
struct ReplicationState {
    var role: EngineRole = .standalone
    /// This node's name in the cluster.
    var node = ""
    /// The settings that shape acknowledgements.
    var syncReplicas = 0
    var syncTimeoutMs = Int64(Self.defaultSyncTimeoutMs)
    /// The epochs this node's log went through.
    var history = EpochHistory()
    /// Leader: the confirmed revision (`Engine.confirmations`) the replicas last heard.
    var announcedConfirmedRev: UInt64 = 0
    /// Leader: the confirmed revision advanced since the replicas last heard it. The next records
    /// carry it; when none follow soon, a heartbeat does.
    var confirmationUnsent = false
    /// Leader: a `.confirm` is scheduled (`Engine.confirmSoon`).
    var confirmationScheduled = false
    /// Leader: a `.confirm` came this turn. Its heartbeat goes at the end of the turn, after the
    /// turn's records (which carry the confirmation, making it needless): a heartbeat waiting in
    /// the batch would keep the turn's records from streaming before the leader's fsync.
    var heartbeatDue = false
    /// Leader: whether it could prove its lease when this engine turn first asked (nil: not asked
    /// yet this turn). Checked once a turn rather than once a write: `commit` proves it again
    /// before anything is logged (`Engine.isFenced`), so a proof that ran out within the turn
    /// still refuses the batch.
    var turnLeadershipProof: Bool?
    /// Leader: the replicas streaming from it, by peer session.
    var streams: [UInt64: ReplicaStream] = [:]
    /// Leader: writes waiting for enough replicas to stream (not applied yet).
    var waitingForReplicas: [(session: SessionLink, request: Request, since: Int64)] = []
    /// Replica: forwarded requests by forward id, and the next id.
    var forwarded: [UInt64: ForwardedRequest] = [:]
    var nextForwardID: UInt64 = 1
    /// Replica: forwarded requests the leader answered, waiting until this node applied their rev.
    var answeredForwards: [(rev: UInt64, session: SessionLink, request: Request, body: ResponseBody)] = []
    /// Replica: requests to forward once a leader is known (held up to `syncTimeoutMs`).
    var unsent: [(session: SessionLink, request: Request, since: Int64)] = []
    /// Requests of a session queued behind its forwarded ones, so that it reads its own writes and
    /// its answers stay in order.
    var deferred: [UInt64: [Request]] = [:]
    /// Forwarded requests of each session not answered yet.
    var inFlight: [UInt64: Int] = [:]
    /// The peer connection to the leader (replica), set by the cluster node.
    var link: (any LeaderLink)?
    /// Replica: when the leader was last heard from, and when the link was opened (ms).
    var lastHeard: Int64 = 0
    var linkOpenedAt: Int64 = 0
    var nextLinkID: UInt64 = 0
    /// Replica: records of this turn already in the log (`Engine.logAhead`), not applied yet.
    var recordsLoggedAhead = 0
    /// Replica: the leader took this link's `replicate`, and the revision it had then.
    var linkStarted = false
    var catchUpTo: UInt64 = 0
    /// Replica: the next `replicate` asks for a snapshot (after moving divergent records aside).
    var forceSnapshot = false
    /// Leader: replicas' client connections (`<node>/<session>`) with onDisconnect queues here,
    /// and the key each queue is kept under.
    var remoteOwners: [String: UInt64] = [:]
    var nextRemoteOwner: UInt64 = 0
    /// Replica: connections that ended while no leader held the link, to tell it.
    var pendingDisconnects: [String] = []
    /// This run has told a leader that its earlier run's connections are gone.
    var announcedRestart = false
    /// Replica: client connections that forwarded onDisconnect registrations.
    var registeredOwners: Set<UInt64> = []
    /// A batch was fenced after its append: no write is taken until the role changes (the log
    /// is ahead of memory until then).
    var fencedUntilRoleChange = false
    /// This node's state as its member key shows it (`streaming`, `catchingUp`, …).
    var memberState = MemberState.candidate
    /// What was last published to the member key and `hello`.
    var published: PublishedPosition?
    /// Leader: a `failover` in progress.
    var switchover: PendingSwitchover?
    /// Snapshot bytes being received from the leader, with the revision they are at.
    var incomingSnapshot: (rev: UInt64, bytes: [UInt8])?
    /// Elections seen, records and bytes streamed (metrics and status).
    var recordsStreamed: UInt64 = 0
    var bytesStreamed: UInt64 = 0
    /// Time writes spent waiting for replicas (ms, in total).
    var syncWaitMs: Int64 = 0
    var metrics: ClusterMetrics?

    /// How long a write waits for replicas (or a leader) when nothing says otherwise.
    package static let defaultSyncTimeoutMs = 5000

    var isClustered: Bool { role != .standalone }

    /// Whether outputs must wait for confirmation (`syncReplicas ≥ 1` on a clustered node).
    var holdsOutputs: Bool { isClustered && syncReplicas > 0 }
}
