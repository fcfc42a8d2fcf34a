import HearthTestSupport
import XCTest

@testable import HearthCluster

/// Three coordinators on a real etcd (lease 2 s): one leader, and a new one with a higher epoch
/// once the old leader is gone.
final class EtcdElectionTests: XCTestCase {
    private var etcd: EtcdProcess?
    private var stores: [EtcdClusterStore] = []
    private var nodes: [TestNode] = []

    override func tearDown() async throws {
        for node in nodes { await node.coordinator.stop() }
        for store in stores { store.shutdown() }
        etcd?.stop()
    }

    private func startCluster() async throws -> [TestNode] {
        let etcd = try await EtcdProcess.start()
        self.etcd = etcd
        var started: [TestNode] = []
        for name in ["n1", "n2", "n3"] {
            // A store per node, as on three machines.
            let store = try EtcdClusterStore(endpoints: [etcd.clientURL])
            stores.append(store)
            started += try await startNodes([name], cluster: "it", store: store, etcd: [etcd.clientURL])
        }
        nodes = started
        return started
    }

    func testALeaderIsElectedAndReplacedWhenItsLeaseExpires() async throws {
        let nodes = try await startCluster()
        await waitUntil("one leader that every node names", timeout: .seconds(8)) { agreeOnOneLeader(nodes) }
        let old = try XCTUnwrap(leaders(nodes).first)
        XCTAssertEqual(nodes.filter { $0.coordinator.hasLeadershipProof() }.map(\.name), [old.name])
        let oldEpoch = old.view.epoch
        XCTAssertGreaterThan(oldEpoch, 0)
        // A crash: nothing released, the lease left to expire in etcd.
        await old.coordinator.haltForTesting()
        let rest = nodes.filter { $0.name != old.name }
        await waitUntil("a new leader within 2 × leaseSeconds (+1 s of slack)", timeout: .seconds(5)) {
            agreeOnOneLeader(rest) && rest[0].view.epoch > oldEpoch
        }
        XCTAssertFalse(rest[0].view.members.contains { $0.node == old.name })
    }

    func testAStoppedLeaderHandsOverAtOnce() async throws {
        let nodes = try await startCluster()
        await waitUntil("one leader", timeout: .seconds(8)) { agreeOnOneLeader(nodes) }
        let old = try XCTUnwrap(leaders(nodes).first)
        let oldEpoch = old.view.epoch
        await old.coordinator.stop()
        let rest = nodes.filter { $0.name != old.name }
        await waitUntil("a new leader", timeout: .seconds(4)) {
            agreeOnOneLeader(rest) && rest[0].view.epoch > oldEpoch
        }
        let lease = try XCTUnwrap(leaders(rest).first?.coordinator.currentLease)
        let leaderKey = try await stores[0].get(key: "/hearth/it/leader")
        XCTAssertEqual(leaderKey?.lease, lease)
    }
}
