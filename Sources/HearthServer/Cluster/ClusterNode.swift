import HearthCluster
import HearthCore
import HearthEngine
import HearthJSON
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Who decides roles: the etcd coordinator in production (`cluster.etcd`), a fixed assignment in
/// tests of the replication stream. Thread-safe.
protocol ClusterMembership: AnyObject, Sendable {
    /// True while this node leads with a provably live lease (docs/cluster.md, "Election and fencing").
    func hasLeadershipProof() -> Bool
    /// Publishes this node's position and state in its member key (`confirmedRev` on a leader);
    /// `confirmedSeen` is the leader's confirmed revision as this node last heard it.
    func publish(state: MemberState, rev: UInt64, lastEpoch: UInt64, confirmedRev: UInt64?, confirmedSeen: UInt64)
    /// Every member as last seen in its member key.
    func members() -> [MemberInfo]
    /// The current leader's node name, advertised address and epoch (nil: none known).
    func leader() -> (node: String, tcp: String, epoch: UInt64)?
    /// Releases leadership so that `target` takes it; hears the new epoch.
    func resign(to target: String, done: @escaping @Sendable (Result<UInt64, DatabaseError>) -> Void)
    /// True while the cluster stays without a leader because no live member may lead without
    /// losing an acknowledged write.
    var noEligibleLeader: Bool { get }
}

extension ClusterMembership {
    var noEligibleLeader: Bool { false }
}

/// A server's place in a cluster: turns the membership's decisions into engine roles, opens the
/// peer connection to the leader, and answers the engine's questions (`ClusterHooks`).
final class ClusterNode: ClusterHooks, @unchecked Sendable {
    let node: String
    let name: String
    let secret: String?
    let membership: any ClusterMembership
    private let group: any EventLoopGroup
    private let logger: Logger
    private let maxLineBytes: Int
    /// TLS for peer connections, when the listeners speak TLS.
    private let peerTLS: NIOSSLContext?
    /// Set once, before the engine takes requests.
    private let engineBox = NIOLockedValueBox<Engine?>(nil)
    private var engine: Engine? { engineBox.withLockedValue { $0 } }
    private let tick = NIOLockedValueBox<RepeatedTask?>(nil)
    /// The engine's replicator, once attached (used on the engine's thread only).
    private let replicatorBox = NIOLockedValueBox<ClusterReplicator?>(nil)

    init(
        node: String, name: String, secret: String?, membership: any ClusterMembership, group: any EventLoopGroup,
        maxLineBytes: Int, peerTLS: NIOSSLContext? = nil, logger: Logger
    ) {
        self.peerTLS = peerTLS
        self.node = node
        self.name = name
        self.secret = secret
        self.membership = membership
        self.group = group
        self.maxLineBytes = maxLineBytes
        var logger = logger
        logger[metadataKey: "node"] = "\(node)"
        self.logger = logger
    }

    /// Joins `engine` to the cluster, before it takes requests: its settings and a 100 ms tick.
    /// It starts as a candidate; the membership assigns its role.
    func attach(to engine: Engine, syncReplicas: Int, syncTimeoutMs: Int) async throws {
        engineBox.withLockedValue { $0 = engine }
        try await engine.loop.submit {
            let replicator = engine.joinCluster(
                hooks: self, node: self.node, syncReplicas: syncReplicas, syncTimeoutMs: syncTimeoutMs)
            self.replicatorBox.withLockedValue { $0 = replicator }
        }.get()
        let task = engine.loop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) {
            [weak engine] _ in engine?.submit(.cluster(.tick))
        }
        tick.withLockedValue { $0 = task }
    }

    /// Tells the engine a role the membership decided.
    func assign(_ role: EngineRole) {
        engine?.submit(.cluster(.role(role)))
    }

    func detach() {
        tick.withLockedValue { $0?.cancel() }
    }

    /// Closes the link to the leader (shutdown, after leaving). Engine thread.
    func closeLink() { replicatorBox.withLockedValue { $0 }?.closeLink() }

    /// Leaves the cluster gracefully (releases leadership and the lease), at shutdown.
    var onLeave: (@Sendable () async -> Void)? {
        get { leaveBox.withLockedValue { $0 } }
        set { leaveBox.withLockedValue { $0 = newValue } }
    }
    private let leaveBox = NIOLockedValueBox<(@Sendable () async -> Void)?>(nil)

    func leave() async {
        await onLeave?()
    }

    // MARK: ClusterHooks

    func hasLeadershipProof() -> Bool { membership.hasLeadershipProof() }

    func openLink(
        id: UInt64, leader: String, fromRev: UInt64, history: EpochHistory, firstLines: [[UInt8]]
    ) -> any LeaderLink {
        ReplicaLink.connect(
            id: id, leader: leader, secret: secret, node: node, fromRev: fromRev, history: history,
            firstLines: firstLines, tls: peerTLS,
            // On an I/O event loop, not the engine's: the link reads and decodes the next records
            // while the engine logs, fsyncs and applies the ones before (the engine's loop did
            // both in turn; a hand-off each way costs less than that wait).
            group: group,
            maxLineBytes: maxLineBytes, logger: logger
        ) { [weak self] link, messages in
            self?.engine?.submit(.cluster(.link(link, messages)))
        }
    }

    func positionChanged(role: EngineRole, rev: UInt64, lastEpoch: UInt64, confirmedRev: UInt64, state: MemberState) {
        membership.publish(
            state: state, rev: rev, lastEpoch: lastEpoch, confirmedRev: role.isLeader ? confirmedRev : nil,
            confirmedSeen: confirmedRev)
    }

    func members() -> [MemberInfo] { membership.members() }

    var noEligibleLeader: Bool { membership.noEligibleLeader }

    func broadcast(_ line: [UInt8]) { broadcaster.withLockedValue { $0 }?(line) }

    /// How `broadcast` reaches the connections (set by the server once it has its registry).
    let broadcaster = NIOLockedValueBox<(@Sendable ([UInt8]) -> Void)?>(nil)

    func liveMembers() -> [String] { membership.members().map(\.node) }

    func clusterObject(role: EngineRole, rev: UInt64) -> JSONValue {
        let leader = membership.leader()
        return .object([
            JSONMember("name", .string(name)), JSONMember("node", .string(node)),
            JSONMember("role", .string(role.name)),
            JSONMember("leader", leader.map { .string($0.tcp) } ?? .null),
            JSONMember("epoch", .int(Int64(clamping: leader?.epoch ?? role.epoch))),
            JSONMember("rev", .int(Int64(clamping: rev))),
        ])
    }

    func resign(to target: String, done: @escaping @Sendable (Result<UInt64, DatabaseError>) -> Void) {
        membership.resign(to: target, done: done)
    }

    func bestReplica(excluding node: String) -> String? {
        membership.members()
            .filter { $0.node != node && $0.state == .streaming }
            .max { $0.rev < $1.rev }?.node
    }
}

/// What `HearthServer.start` needs to join a cluster.
struct ClusterSetup: Sendable {
    var node: String
    var name: String
    var secret: String?
    var syncReplicas: Int
    var syncTimeoutMs: Int
    /// Decides roles and hands them to the node (`ClusterNode.assign`).
    var membership: any ClusterMembership
    /// The CA peers' certificates are checked against when the listeners speak TLS.
    var peerCA: String? = nil
}
