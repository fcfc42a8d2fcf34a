import XCTest

@testable import HearthCluster

/// The election and fencing of docs/cluster.md ("Election and fencing") on `InMemoryClusterStore` (lease 2 s).
final class CoordinatorTests: XCTestCase {
    private let names = ["n1", "n2", "n3"]
    private var nodes: [TestNode] = []

    override func tearDown() async throws {
        for node in nodes { await node.coordinator.stop() }
        nodes = []
    }

    func testThreeNodesElectExactlyOneLeader() async throws {
        let store = InMemoryClusterStore()
        nodes = try await startNodes(names, cluster: "one", store: store)
        await waitUntil("one leader that every node names", timeout: .seconds(6)) { agreeOnOneLeader(nodes) }
        let leader = try XCTUnwrap(leaders(nodes).first)
        // Equal positions: the tie goes to the lower node name.
        XCTAssertEqual(leader.name, "n1")
        XCTAssertEqual(nodes.filter { $0.coordinator.hasLeadershipProof() }.map(\.name), ["n1"])
        let kv = try await store.get(key: "/hearth/one/leader")
        XCTAssertEqual(leader.view.epoch, UInt64(try XCTUnwrap(kv).createRevision))
        await waitUntil("every member key", timeout: .seconds(3)) {
            nodes.allSatisfy { $0.view.members.map(\.node) == self.names }
        }
        XCTAssertEqual(leader.views.all.last?.role, .leader)
        XCTAssertEqual(nodes[1].view.electionsSeen, 1)
    }

    func testTheLatestLogWinsWhateverItsName() async throws {
        let store = InMemoryClusterStore()
        let positions = [
            "n1": NodePosition(rev: 5, lastEpoch: 3, confirmedRevSeen: 0),
            "n2": NodePosition(rev: 2, lastEpoch: 4, confirmedRevSeen: 0),
            "n3": NodePosition(rev: 9, lastEpoch: 3, confirmedRevSeen: 0),
        ]
        nodes = try await startNodes(names, cluster: "latest", store: store, positions: positions)
        await waitUntil("one leader", timeout: .seconds(6)) { agreeOnOneLeader(nodes) }
        XCTAssertEqual(leaders(nodes).map(\.name), ["n2"])
    }

    func testAnExpiredLeaseElectsAnotherLeaderWithinTwiceTheLease() async throws {
        let store = InMemoryClusterStore()
        nodes = try await startNodes(names, cluster: "expiry", store: store)
        await waitUntil("one leader", timeout: .seconds(6)) { agreeOnOneLeader(nodes) }
        let old = try XCTUnwrap(leaders(nodes).first)
        let oldEpoch = old.view.epoch
        await old.coordinator.haltForTesting()
        let rest = nodes.filter { $0.name != old.name }
        // 2 × leaseSeconds, plus a second for a loaded machine's scheduling.
        await waitUntil("a new leader after the old lease expired", timeout: .seconds(5)) {
            agreeOnOneLeader(rest) && rest[0].view.epoch > oldEpoch
        }
        XCTAssertEqual(leaders(rest).map(\.name), ["n2"])
        XCTAssertFalse(rest[0].view.members.contains { $0.node == old.name })
        XCTAssertEqual(rest[1].view.electionsSeen, 2)
    }

    func testProofOfLeadershipRunsOutWhenKeepAlivesStop() async throws {
        let store = InMemoryClusterStore()
        nodes = try await startNodes(names, cluster: "proof", store: store)
        await waitUntil("one leader", timeout: .seconds(6)) { agreeOnOneLeader(nodes) }
        let old = try XCTUnwrap(leaders(nodes).first)
        XCTAssertTrue(old.coordinator.hasLeadershipProof())
        old.coordinator.pauseKeepAlives(true)
        // leaseSeconds × 2/3 after the last keep-alive was sent, at most.
        await waitUntil("the proof runs out", timeout: .seconds(2)) { !old.coordinator.hasLeadershipProof() }
        await waitUntil("the old leader reports it no longer leads", timeout: .seconds(1)) {
            old.views.all.last?.role != .leader
        }
        let rest = nodes.filter { $0.name != old.name }
        await waitUntil("another leader", timeout: .seconds(5)) { agreeOnOneLeader(rest) }
        XCTAssertFalse(old.coordinator.hasLeadershipProof())
        old.coordinator.pauseKeepAlives(false)
        // Back with etcd: a replica under a new lease, following the new leader.
        await waitUntil("the old leader follows the new one", timeout: .seconds(5)) {
            agreeOnOneLeader(nodes) && old.view.members.contains { $0.node == old.name }
        }
        XCTAssertEqual(old.view.role, .replica)
        XCTAssertFalse(old.coordinator.hasLeadershipProof())
    }

    func testResignHandsLeadershipToTheTarget() async throws {
        let store = InMemoryClusterStore()
        nodes = try await startNodes(names, cluster: "switch", store: store)
        await waitUntil("one leader", timeout: .seconds(6)) { agreeOnOneLeader(nodes) }
        let old = try XCTUnwrap(leaders(nodes).first)
        let oldEpoch = old.view.epoch
        let target = try XCTUnwrap(nodes.last)
        XCTAssertNotEqual(old.name, target.name)
        let seenBefore = nodes.map { $0.views.all.count }
        try await old.coordinator.resign(to: target.name)
        XCTAssertFalse(old.coordinator.hasLeadershipProof())
        await waitUntil("the target leads", timeout: .seconds(3)) {
            agreeOnOneLeader(nodes) && target.view.role == .leader && target.view.epoch > oldEpoch
        }
        // Nobody but the target campaigned.
        for (node, seen) in zip(nodes, seenBefore) where node.name != target.name {
            XCTAssertFalse(
                node.views.all.dropFirst(seen).contains { $0.role != .replica },
                "\(node.name): \(node.views.all.map { "\($0.role) \($0.leader?.node ?? "-")" })")
        }
        do {
            try await old.coordinator.resign(to: nil)
            XCTFail("a replica resigned")
        } catch let error as ClusterCoordinatorError {
            XCTAssertEqual(error, .notLeader)
        }
    }

    func testWithoutAnEligibleMemberTheClusterStaysLeaderless() async throws {
        let store = InMemoryClusterStore()
        // n1 saw the old leader confirm rev 10 but holds only 8; n2 holds 7.
        let positions = [
            "n1": NodePosition(rev: 8, lastEpoch: 2, confirmedRevSeen: 10),
            "n2": NodePosition(rev: 7, lastEpoch: 2, confirmedRevSeen: 0),
        ]
        nodes = try await startNodes(
            ["n1", "n2"], cluster: "stuck", store: store, syncReplicas: 1, positions: positions)
        await waitUntil("no eligible leader is reported", timeout: .seconds(5)) { nodes[0].view.noEligibleLeader }
        try await Task.sleep(for: .seconds(1))
        XCTAssertTrue(leaders(nodes).isEmpty)
        let kv = try await store.get(key: "/hearth/stuck/leader")
        XCTAssertNil(kv)
        // Once a node has the confirmed records, it may lead.
        nodes[0].position.value = NodePosition(rev: 10, lastEpoch: 2, confirmedRevSeen: 10)
        await waitUntil("n1 leads", timeout: .seconds(4)) { agreeOnOneLeader(nodes) }
        XCTAssertFalse(nodes[0].view.noEligibleLeader)
    }
}
