import HearthCluster
import HearthCore
import HearthEngine
import Logging
import NIOConcurrencyHelpers

/// The cluster membership decided in etcd (docs/cluster.md, "etcd layout", "Election and fencing"):
/// `ClusterCoordinator`'s views become engine roles, and lost members become onDisconnect runs on
/// the leader.
final class EtcdMembership: ClusterMembership, Sendable {
    let coordinator: ClusterCoordinator
    private let store: EtcdClusterStore
    private let settings: ClusterSettings
    private let logger: Logger
    private struct State {
        var position = NodePosition(rev: 0, lastEpoch: 0, confirmedRevSeen: 0)
        var assign: (@Sendable (EngineRole) -> Void)?
        var lost: (@Sendable ([String]) -> Void)?
        var role: EngineRole?
        var members: Set<String> = []
    }
    private let state = NIOLockedValueBox(State())

    init(settings: ClusterSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        do { store = try EtcdClusterStore(endpoints: settings.etcd) } catch {
            throw ConfigurationError("cluster: \(error)")
        }
        let state = self.state
        // The coordinator is made before `self` exists: it reaches `viewChanged` through a box.
        let box = NIOLockedValueBox<(@Sendable (ClusterView) -> Void)?>(nil)
        coordinator = ClusterCoordinator(
            settings: settings, store: store, logger: logger,
            position: { state.withLockedValue { $0.position } },
            onChange: { view in box.withLockedValue { $0 }?(view) })
        box.withLockedValue { $0 = { [weak self] view in self?.viewChanged(view) } }
    }

    /// Starts taking part; `assign` hears each role, `lost` the members that left (lease expired).
    func start(
        assign: @escaping @Sendable (EngineRole) -> Void, lost: @escaping @Sendable ([String]) -> Void
    ) async throws {
        state.withLockedValue {
            $0.assign = assign
            $0.lost = lost
        }
        try await coordinator.start()
    }

    func stop() async {
        await coordinator.stop()
        store.shutdown()
    }

    private func viewChanged(_ view: ClusterView) {
        let role: EngineRole
        switch view.role {
        case .leader: role = .leader(epoch: view.epoch)
        case .replica where view.leader?.node == settings.node:
            role = .candidate(epoch: view.epoch)  // its own leader key, before it knows it leads
        case .replica: role = .replica(leader: view.leader?.tcp, epoch: view.epoch)
        case .candidate: role = .candidate(epoch: view.epoch)
        }
        let names = Set(view.members.map(\.node))
        let (assign, lostNames, lost) = state.withLockedValue {
            state -> (
                (@Sendable (EngineRole) -> Void)?, [String], (@Sendable ([String]) -> Void)?
            ) in
            let gone = state.members.subtracting(names).sorted()
            state.members = names
            let changed = state.role != role
            state.role = role
            return (changed ? state.assign : nil, gone, state.lost)
        }
        if view.noEligibleLeader {
            logger.warning(
                "cluster: no member is eligible to lead without losing an acknowledged write; staying read-only")
        }
        assign?(role)
        if !lostNames.isEmpty { lost?(lostNames) }
    }

    // MARK: ClusterMembership

    func hasLeadershipProof() -> Bool { coordinator.hasLeadershipProof() }

    func publish(
        state memberState: MemberState, rev: UInt64, lastEpoch: UInt64, confirmedRev: UInt64?, confirmedSeen: UInt64
    ) {
        state.withLockedValue { state in
            state.position.rev = rev
            state.position.lastEpoch = lastEpoch
            state.position.confirmedRevSeen = max(state.position.confirmedRevSeen, confirmedSeen)
        }
        coordinator.publish(state: memberState, confirmedRev: confirmedRev)
    }

    func members() -> [MemberInfo] { coordinator.view.members }

    var noEligibleLeader: Bool { coordinator.view.noEligibleLeader }

    func leader() -> (node: String, tcp: String, epoch: UInt64)? {
        let view = coordinator.view
        return view.leader.map { ($0.node, $0.tcp, view.epoch) }
    }

    func resign(to target: String, done: @escaping @Sendable (Result<UInt64, DatabaseError>) -> Void) {
        let coordinator = self.coordinator
        let timeout = settings.syncTimeoutMs
        Task {
            do {
                try await coordinator.resign(to: target)
            } catch {
                done(.failure(DatabaseError(.unavailable, "switchover failed: \(error)")))
                return
            }
            let deadline = ContinuousClock.now + .milliseconds(timeout)
            while ContinuousClock.now < deadline {
                let view = coordinator.view
                if view.leader?.node == target {
                    // The target holds the leader key; its own member record (what `clusterStatus`
                    // lists) says so a moment later. Until it does every member reads as a replica
                    // catching up, so the answer waits for it too (not past the deadline: the
                    // leadership has moved either way).
                    while ContinuousClock.now < deadline,
                        !coordinator.view.members.contains(where: { $0.node == target && $0.role == .leader })
                    {
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                    done(.success(coordinator.view.epoch))
                    return
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            done(.failure(DatabaseError(.unavailable, "\(target) did not take the lead within \(timeout) ms")))
        }
    }
}
