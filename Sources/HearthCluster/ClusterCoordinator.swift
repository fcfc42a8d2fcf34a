public import Logging
import Synchronization

/// One node's part in the cluster (docs/cluster.md, "etcd layout" and "Election and fencing"): its
/// etcd lease and member key, the election, the proof of leadership the engine checks before every
/// acknowledgement, and switchover.
///
/// Thread-safe: every method may be called from any thread (the server calls it from NIO
/// threads). The coordinator runs four tasks of its own after `start()`: the keep-alives (every
/// `leaseSeconds / 3`), the watch of the cluster's keys, the control loop (every 100 ms: proof,
/// lease, member key, election) and the delivery of views to `onChange`, in order, one at a time.
public final class ClusterCoordinator: Sendable {
    let settings: ClusterSettings
    let store: any ClusterStore
    let logger: Logger
    let position: @Sendable () -> NodePosition
    let onChange: @Sendable (ClusterView) -> Void
    let keys: ClusterKeys
    let clock = ContinuousClock()
    let state: Mutex<CoordinatorState>
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let changes: AsyncStream<Void>
    let changed: AsyncStream<Void>.Continuation

    /// How often the control loop looks at the proof, the lease, the member key and the election.
    static let tick = Duration.milliseconds(100)
    /// How often a member key is refreshed at most when only its position changed.
    static let memberRefresh = Duration.seconds(1)

    /// - Parameters:
    ///   - position: this node's log position, asked whenever the coordinator needs it.
    ///   - onChange: called with the new view on every change of role, leader, epoch, member list
    ///     (including a member's fields) or eligibility; one call at a time, in order, from the
    ///     coordinator's own task.
    public init(
        settings: ClusterSettings, store: any ClusterStore, logger: Logger,
        position: @escaping @Sendable () -> NodePosition, onChange: @escaping @Sendable (ClusterView) -> Void
    ) {
        self.settings = settings
        self.store = store
        self.logger = logger
        self.position = position
        self.onChange = onChange
        self.keys = ClusterKeys(name: settings.name)
        self.state = Mutex(CoordinatorState())
        (changes, changed) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Validates the settings, grants this node's lease and registers `members/<node>`, then
    /// starts the keep-alives, the watch and the election. Throws when the settings are invalid
    /// or etcd cannot be reached.
    public func start() async throws {
        try settings.validate()
        let sent = clock.now
        let lease = try await store.grantLease(ttlSeconds: settings.leaseSeconds)
        state.withLock { state in
            state.lease = lease
            state.lastKeepAliveSent = sent
        }
        try await writeMember(force: true)
        logger.info(
            "cluster: registered",
            metadata: ["cluster": "\(settings.name)", "node": "\(settings.node)", "lease": "\(lease)"])
        let loops: [@Sendable () async -> Void] = [
            { [self] in await keepAliveLoop() }, { [self] in await watchLoop() },
            { [self] in await controlLoop() }, { [self] in await deliverChanges() },
        ]
        let started = loops.map { loop in Task { await loop() } }
        tasks.withLock { $0 = started }
    }

    /// Stops taking part: releases the leader key if this node holds it, revokes the lease (which
    /// deletes the member key) and stops every task. The last view is delivered before it returns.
    public func stop() async {
        state.withLock { $0.stopped = true }
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks = [] }
            return tasks
        }
        // The last task delivers views: it ends once `changed` finishes, after the last view.
        for task in running.dropLast() { task.cancel() }
        for task in running.dropLast() { await task.value }
        let (held, lease) = state.withLock { state -> (Int64?, LeaseID?) in
            let held = state.holdsLeadership ? state.ownEpoch : nil
            state.holdsLeadership = false
            state.candidateSince = nil
            return (held, state.lease)
        }
        if let held {
            _ = try? await store.compareAndDelete(key: keys.leader, createRevision: held)
            logger.info("cluster: released the leader key", metadata: ["epoch": "\(held)"])
        }
        if let lease { try? await store.revoke(lease) }
        changed.yield()
        changed.finish()
        if let notifier = running.last { await notifier.value }
    }

    /// True only while this node holds the leader key and its last successful keep-alive was sent
    /// less than `leaseSeconds × 2/3` ago on the monotonic clock. Cheap: one lock.
    public func hasLeadershipProof() -> Bool {
        let now = clock.now
        return state.withLock { proofHolds($0, now: now) }
    }

    /// The server's state for this node's member key, and (on a leader) its `confirmedRev`. A
    /// change of state is written at once (within one control-loop tick); a change of position
    /// at most once a second.
    public func publish(state memberState: MemberState, confirmedRev: UInt64?) {
        state.withLock { state in
            if state.serverState != memberState { state.memberDirty = true }
            state.serverState = memberState
            state.confirmedRev = confirmedRev
        }
    }

    /// The cluster as this node knows it now.
    public var view: ClusterView {
        state.withLock { makeView($0) }
    }

    /// Switchover (docs/cluster.md, "Switchover"): writes a short-lived `failover` notice so that only `to`
    /// (or, without a target, anyone but this node) campaigns for `leaseSeconds`, stops leading,
    /// and deletes the leader key by compare-and-delete on its create revision. The server calls
    /// it only once the target has every record.
    ///
    /// - Throws: `ClusterCoordinatorError.notLeader` when this node does not hold the leader key,
    ///   `.unknownTarget` when `to` is not a live member, or the store's error.
    public func resign(to target: String?) async throws {
        let (epoch, members) = state.withLock { state in
            (state.holdsLeadership ? state.ownEpoch : nil, state.members)
        }
        guard let epoch else { throw ClusterCoordinatorError.notLeader }
        if let target, target == settings.node || members[target] == nil {
            throw ClusterCoordinatorError.unknownTarget(target)
        }
        let notice = FailoverNotice(from: settings.node, to: target)
        let noticeLease = try await store.grantLease(ttlSeconds: settings.leaseSeconds)
        try await store.put(key: keys.failover, value: notice.json.serialized, lease: noticeLease)
        state.withLock { state in
            state.holdsLeadership = false
            state.candidateSince = nil
            state.failover = notice
            state.memberDirty = true
        }
        changed.yield()
        logger.info(
            "cluster: resigning leadership", metadata: ["epoch": "\(epoch)", "to": "\(target ?? "any other node")"])
        let released = try await store.compareAndDelete(key: keys.leader, createRevision: epoch)
        if !released {
            logger.info("cluster: the leader key was already gone when resigning", metadata: ["epoch": "\(epoch)"])
        }
    }

    // MARK: - Tests

    /// Stops (or resumes) sending keep-alives, so that tests can let the proof of leadership and
    /// the lease run out.
    func pauseKeepAlives(_ paused: Bool) {
        state.withLock { $0.keepAlivesPaused = paused }
    }

    /// Stops every task as a crash would: nothing is released, the lease is left to expire.
    func haltForTesting() async {
        state.withLock { $0.stopped = true }
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks = [] }
            return tasks
        }
        for task in running.dropLast() { task.cancel() }
        for task in running.dropLast() { await task.value }
        state.withLock { $0.holdsLeadership = false }
        changed.finish()
    }

    /// The lease this node currently holds.
    var currentLease: LeaseID? {
        state.withLock { $0.lease }
    }

    // MARK: - Shared with the loops

    func proofHolds(_ state: CoordinatorState, now: ContinuousClock.Instant) -> Bool {
        guard state.holdsLeadership, let sent = state.lastKeepAliveSent else { return false }
        return now - sent < .milliseconds(settings.leaseSeconds * 2_000 / 3)
    }

    func role(_ state: CoordinatorState) -> ClusterRole {
        state.holdsLeadership ? .leader : state.candidateSince != nil ? .candidate : .replica
    }

    func makeView(_ state: CoordinatorState) -> ClusterView {
        ClusterView(
            node: settings.node, role: role(state), state: publishedState(state), epoch: state.epoch,
            leader: state.leader, members: state.members.values.sorted { $0.node < $1.node },
            noEligibleLeader: state.noEligibleLeader, electionsSeen: state.electionsSeen)
    }

    /// The state the member key says: `candidate` while campaigning, else the server's.
    func publishedState(_ state: CoordinatorState) -> MemberState {
        state.candidateSince != nil ? .candidate : state.serverState
    }

    /// Hands views to `onChange` one at a time, skipping a view equal to the last one delivered.
    private func deliverChanges() async {
        var last: ClusterView?
        for await _ in changes {
            let current = view
            if current != last {
                last = current
                onChange(current)
            }
        }
    }
}

/// Why a `ClusterCoordinator` call was refused.
public enum ClusterCoordinatorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `resign` was called on a node that does not hold the leader key.
    case notLeader
    /// `resign(to:)` named a node that is not a live member (or this node).
    case unknownTarget(String)

    /// The refusal in an operator's words.
    public var description: String {
        switch self {
        case .notLeader: return "this node is not the leader"
        case .unknownTarget(let node): return "\"\(node)\" is not another live member of the cluster"
        }
    }
}
