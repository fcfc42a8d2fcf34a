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

/// What `ClusterReplicator` keeps (engine thread only): what every role needs, and apart, what
/// only a leader and what only a replica uses. A role change keeps all of it, and `changeRole`
/// settles what the old role left: a replica that becomes leader runs here the requests it held
/// or lost on the way to its old leader (`retakeForwards`); a leader that steps down ends its
/// streams and fails the writes waiting for replicas (`stepDown`).
struct ReplicationState {
    var role: EngineRole = .standalone
    /// This node's name in the cluster.
    var node = ""
    /// The settings that shape acknowledgements.
    var syncReplicas = 0
    var syncTimeoutMs = Int64(Self.defaultSyncTimeoutMs)
    /// The epochs this node's log went through.
    var history = EpochHistory()
    /// Requests of a session queued behind its forwarded (or waiting) ones, so that it reads its
    /// own writes and its answers stay in order.
    var deferred: [UInt64: [Request]] = [:]
    /// Forwarded (or waiting) requests of each session not answered yet.
    var inFlight: [UInt64: Int] = [:]
    /// This node's state as its member key shows it (`streaming`, `catchingUp`, …).
    var memberState = MemberState.candidate
    /// What was last published to the member key and `hello`.
    var published: PublishedPosition?
    var metrics: ClusterMetrics?
    /// What a leader keeps.
    var leader = LeaderState()
    /// What a replica keeps.
    var replica = ReplicaState()

    /// How long a write waits for replicas (or a leader) when nothing says otherwise.
    package static let defaultSyncTimeoutMs = 5000

    var isClustered: Bool { role != .standalone }

    /// Whether outputs must wait for confirmation (`syncReplicas ≥ 1` on a clustered node).
    var holdsOutputs: Bool { isClustered && syncReplicas > 0 }
}

/// What a leader keeps: its replicas' streams and what they confirmed, the writes waiting for
/// replicas, the onDisconnect queues of the replicas' clients, and a switchover under way.
struct LeaderState {
    /// The confirmed revision (`Engine.confirmations`) the replicas last heard.
    var announcedConfirmedRev: UInt64 = 0
    /// The confirmed revision advanced since the replicas last heard it. The next records carry
    /// it; when none follow soon, a heartbeat does.
    var confirmationUnsent = false
    /// A `.confirm` is scheduled (`ClusterReplicator.confirmSoon`).
    var confirmationScheduled = false
    /// A `.confirm` came this turn. Its heartbeat goes at the end of the turn, after the turn's
    /// records (which carry the confirmation, making it needless): a heartbeat waiting in the
    /// batch would keep the turn's records from streaming before the leader's fsync.
    var heartbeatDue = false
    /// Whether it could prove its lease when this engine turn first asked (nil: not asked yet
    /// this turn). Checked once a turn rather than once a write: `commit` proves it again before
    /// anything is logged (`ClusterReplicator.isFenced`), so a proof that ran out within the turn
    /// still refuses the batch.
    var turnLeadershipProof: Bool?
    /// A batch was fenced after its append: no write is taken until the role changes (the log
    /// is ahead of memory until then).
    var fencedUntilRoleChange = false
    /// The replicas streaming from it, by peer session.
    var streams: [UInt64: ReplicaStream] = [:]
    /// Writes waiting for enough replicas to stream (not applied yet).
    var waitingForReplicas: [(session: SessionLink, request: Request, since: Int64)] = []
    /// Replicas' client connections (`<node>/<session>`) with onDisconnect queues here, and the
    /// key each queue is kept under.
    var remoteOwners: [String: UInt64] = [:]
    var nextRemoteOwner: UInt64 = 0
    /// A `failover` in progress.
    var switchover: PendingSwitchover?
    /// Records and bytes streamed (metrics and status).
    var recordsStreamed: UInt64 = 0
    var bytesStreamed: UInt64 = 0
    /// Time writes spent waiting for replicas (ms, in total).
    var syncWaitMs: Int64 = 0
}

/// What a replica keeps: its link to the leader and how far it got, the requests it forwarded or
/// holds for a leader, and the snapshot it is receiving.
struct ReplicaState {
    /// The peer connection to the leader, opened through the cluster node.
    var link: (any LeaderLink)?
    /// When the leader was last heard from, and when the link was opened (ms).
    var lastHeard: Int64 = 0
    var linkOpenedAt: Int64 = 0
    var nextLinkID: UInt64 = 0
    /// The leader took this link's `replicate`, and the revision it had then.
    var linkStarted = false
    var catchUpTo: UInt64 = 0
    /// The next `replicate` asks for a snapshot (after moving divergent records aside).
    var forceSnapshot = false
    /// Snapshot bytes being received from the leader, with the revision they are at.
    var incomingSnapshot: (rev: UInt64, bytes: [UInt8])?
    /// Records of this turn already in the log (`ClusterReplicator.logAhead`), not applied yet.
    var recordsLoggedAhead = 0
    /// Forwarded requests by forward id, and the next id.
    var forwarded: [UInt64: ForwardedRequest] = [:]
    var nextForwardID: UInt64 = 1
    /// Forwarded requests the leader answered, waiting until this node applied their revision.
    var answeredForwards: [(rev: UInt64, session: SessionLink, request: Request, body: ResponseBody)] = []
    /// Requests to forward once a leader is known (held up to `syncTimeoutMs`).
    var unsent: [(session: SessionLink, request: Request, since: Int64)] = []
    /// Connections that ended while no leader held the link, to tell it.
    var pendingDisconnects: [String] = []
    /// This run has told a leader that its earlier run's connections are gone.
    var announcedRestart = false
    /// Client connections that forwarded onDisconnect registrations.
    var registeredOwners: Set<UInt64> = []
}
