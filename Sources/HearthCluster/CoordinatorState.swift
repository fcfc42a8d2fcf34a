/// Everything a `ClusterCoordinator` knows, behind its mutex.
struct CoordinatorState: Sendable {
    // This node's lease.
    var lease: LeaseID?
    /// Set when the lease is gone (a keep-alive found it expired, a write was refused for it) or
    /// must be given up (leadership lost): the control loop revokes it and registers anew.
    var leaseLost = false
    /// When the last successful keep-alive (or the grant) was sent.
    var lastKeepAliveSent: ContinuousClock.Instant?
    var keepAlivesPaused = false

    // This node's member key.
    var registered = false
    var memberDirty = true
    var lastMemberWrite: ContinuousClock.Instant?
    var lastMemberValue: [UInt8]?
    var serverState = MemberState.catchingUp
    var confirmedRev: UInt64?

    // The cluster as watched.
    /// True once the keys were read and the watch runs; elections wait for it.
    var synced = false
    var leader: LeaderInfo?
    /// The leader key's create revision while it exists, else 0.
    var leaderCreateRevision: Int64 = 0
    var epoch: UInt64 = 0
    var members: [String: MemberInfo] = [:]
    var failover: FailoverNotice?
    var electionsSeen = 0

    // The election.
    var holdsLeadership = false
    /// The create revision of the leader key this node wrote.
    var ownEpoch: Int64 = 0
    var candidateSince: ContinuousClock.Instant?
    var coldStartCheckPending = false
    var coldStartUntil: ContinuousClock.Instant?
    var noEligibleLeader = false

    // Logging.
    var unreachableSince: ContinuousClock.Instant?
    var lastUnreachableWarning: ContinuousClock.Instant?

    var stopped = false
}
