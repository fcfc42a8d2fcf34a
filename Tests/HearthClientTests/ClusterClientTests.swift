import HearthJSON
import XCTest

@testable import HearthClient

/// The client's side of replication against a scripted node (`FakeClusterNode`): what a node
/// says about its cluster, writes refused during an election, and the admin operations.
final class ClusterClientTests: XCTestCase {
    private func clusterObject(role: String, leader: String?, epoch: Int64) -> JSONValue {
        .object([
            JSONMember("name", .string("hearth")), JSONMember("node", .string("n1")),
            JSONMember("role", .string(role)), JSONMember("leader", leader.map(JSONValue.string) ?? .null),
            JSONMember("epoch", .int(epoch)), JSONMember("rev", .int(345)),
        ])
    }

    private func client(_ node: FakeClusterNode, leaderRetryTimeoutMs: Int64 = 5000) -> Database {
        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(20)
        configuration.reconnectMaxDelay = .milliseconds(200)
        configuration.leaderRetryTimeout = .milliseconds(leaderRetryTimeoutMs)
        return Database(url: "hearth://\(node.address)", configuration: configuration)
    }

    func testTheHelloAndClusterEventsShowInClusterAndInfo() async throws {
        let node = try await FakeClusterNode.start(
            cluster: clusterObject(role: "leader", leader: "127.0.0.1:9001", epoch: 12))
        let db = client(node)
        defer {
            db.goOffline()
            Task { await node.stop() }
        }
        let seen = Recorder<[String: String]>()
        db.reference(withPath: ".info/cluster").observe(.value) { snapshot in
            let value = snapshot.value as? [String: Any] ?? [:]
            seen.append(value.mapValues { "\($0)" })
        }
        try await db.waitForConnection()
        XCTAssertEqual(db.connectedAddress, node.address)
        let cluster = try XCTUnwrap(db.cluster)
        XCTAssertEqual(cluster.name, "hearth")
        XCTAssertEqual(cluster.node, "n1")
        XCTAssertEqual(cluster.role, .leader)
        XCTAssertEqual(cluster.leader, "127.0.0.1:9001")
        XCTAssertEqual(cluster.epoch, 12)
        XCTAssertEqual(cluster.rev, 345)
        try await seen.wait(for: 1)
        XCTAssertEqual(seen.all.first?["role"], "leader")

        // An election: no leader, then a new one with a later epoch.
        node.announce(clusterObject(role: "candidate", leader: nil, epoch: 12))
        try await eventually("the candidate") { db.cluster?.role == .candidate }
        XCTAssertNil(db.cluster?.leader)
        node.announce(clusterObject(role: "replica", leader: "127.0.0.1:9002", epoch: 13))
        try await eventually("the new leader") { db.cluster?.leader == "127.0.0.1:9002" }
        XCTAssertEqual(db.cluster?.epoch, 13)
        try await eventually(".info/cluster follows") { seen.all.last?["epoch"] == "13" }
        XCTAssertEqual(seen.all.map { $0["role"] }, ["leader", "candidate", "replica"])
        XCTAssertNil(seen.all[1]["leader"], "a null leader is absent from .info/cluster")
    }

    func testAWriteRefusedForWantOfALeaderIsSentAgainWithItsWriteID() async throws {
        let node = try await FakeClusterNode.start(cluster: clusterObject(role: "replica", leader: nil, epoch: 3))
        node.state.withLockedValue {
            $0.refusals = 2
            $0.refusal = "no leader"
        }
        let db = client(node)
        defer {
            db.goOffline()
            Task { await node.stop() }
        }
        try await db.reference(withPath: "a").setValue(1)
        let ids = node.state.withLockedValue { $0.writeIDs }
        XCTAssertEqual(ids.count, 3, "two refusals, then the write")
        XCTAssertEqual(Set(ids).count, 1, "the same write id every time: \(ids)")

        // "not the leader" too; other unavailable answers end the write at once.
        node.state.withLockedValue {
            $0.refusals = 1
            $0.refusal = "not the leader"
        }
        try await db.reference(withPath: "b").setValue(2)
        node.state.withLockedValue {
            $0.refusals = 1
            $0.refusal = "not enough replicas"
        }
        do {
            try await db.reference(withPath: "c").setValue(3)
            XCTFail("the write succeeded")
        } catch {
            XCTAssertEqual(error.hearthCode, .unavailable)
            XCTAssertEqual((error as? HearthError)?.message, "not enough replicas")
        }
        XCTAssertEqual(node.state.withLockedValue { $0.writeIDs.count }, 6)
    }

    func testALeaderlessRefusalFailsTheWriteOnceTheRetryTimeIsOver() async throws {
        let node = try await FakeClusterNode.start(cluster: clusterObject(role: "replica", leader: nil, epoch: 3))
        node.state.withLockedValue { $0.refusals = .max }
        let db = client(node, leaderRetryTimeoutMs: 300)
        defer {
            db.goOffline()
            Task { await node.stop() }
        }
        let start = Date()
        do {
            try await db.reference(withPath: "a").setValue(1)
            XCTFail("the write succeeded")
        } catch {
            XCTAssertEqual((error as? HearthError)?.message, "no leader")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        let ids = node.state.withLockedValue { $0.writeIDs }
        XCTAssertGreaterThan(ids.count, 1)
        XCTAssertEqual(Set(ids).count, 1)
    }

    func testClusterStatusAndFailover() async throws {
        let cluster = clusterObject(role: "leader", leader: "127.0.0.1:9001", epoch: 12)
        let node = try await FakeClusterNode.start(cluster: cluster)
        let members = JSONValue.array([
            .object([
                JSONMember("node", .string("n1")), JSONMember("tcp", .string("127.0.0.1:9001")),
                JSONMember("http", .null), JSONMember("role", .string("leader")), JSONMember("epoch", .int(12)),
                JSONMember("rev", .int(345)), JSONMember("lastEpoch", .int(12)), JSONMember("state", .string("leader")),
                JSONMember("lagRevs", .int(0)), JSONMember("lagMs", .int(0)),
            ]),
            .object([
                JSONMember("node", .string("n2")), JSONMember("tcp", .string("127.0.0.1:9002")),
                JSONMember("role", .string("replica")), JSONMember("epoch", .int(12)), JSONMember("rev", .int(340)),
                JSONMember("lastEpoch", .int(12)), JSONMember("state", .string("streaming")),
                JSONMember("lagRevs", .int(5)), JSONMember("lagMs", .int(12)),
            ]),
        ])
        node.state.withLockedValue {
            $0.clusterStatus = .object([
                JSONMember("ok", .bool(true)), JSONMember("cluster", cluster), JSONMember("members", members),
            ])
            $0.failover = .object([
                JSONMember("ok", .bool(true)), JSONMember("leader", .string("n2")), JSONMember("epoch", .int(13)),
            ])
        }
        let db = client(node)
        defer {
            db.goOffline()
            Task { await node.stop() }
        }
        let status = try await db.clusterStatus()
        XCTAssertEqual(status.cluster?.node, "n1")
        XCTAssertEqual(status.members.map(\.node), ["n1", "n2"])
        XCTAssertEqual(status.members[1].role, .replica)
        XCTAssertEqual(status.members[1].state, "streaming")
        XCTAssertEqual(status.members[1].lagRevs, 5)
        XCTAssertEqual(status.members[1].lagMs, 12)
        XCTAssertNil(status.members[0].http)
        XCTAssertEqual(status.json["members"], members)
        XCTAssertFalse(status.noEligibleLeader)
        node.state.withLockedValue {
            guard case .object(var fields) = cluster else { return }
            fields.append(JSONMember("noEligibleLeader", .bool(true)))
            $0.clusterStatus = .object([
                JSONMember("ok", .bool(true)), JSONMember("cluster", .object(fields)), JSONMember("members", members),
            ])
        }
        let leaderless = try await db.clusterStatus()
        XCTAssertTrue(leaderless.noEligibleLeader)

        let result = try await db.failover(to: "n2")
        XCTAssertEqual(result, FailoverResult(leader: "n2", epoch: 13))
        node.state.withLockedValue {
            $0.failover = .object([
                JSONMember("ok", .bool(false)),
                JSONMember(
                    "error",
                    .object([
                        JSONMember("code", .string("unavailable")),
                        JSONMember("message", .string("n3 did not catch up within 5000 ms")),
                    ])),
            ])
        }
        do {
            _ = try await db.failover()
            XCTFail("the failover succeeded")
        } catch {
            XCTAssertEqual(error as? HearthError, HearthError(.unavailable, "n3 did not catch up within 5000 ms"))
        }
        XCTAssertEqual(node.state.withLockedValue { $0.failoverTargets }, [.string("n2"), .null])
    }

    func testClusterOperationsOnAStandaloneServerSaySo() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            do {
                _ = try await db.clusterStatus()
                XCTFail("a standalone server answered clusterStatus")
            } catch {
                XCTAssertEqual(error.hearthCode, .notClustered)
                XCTAssertTrue(
                    (error as? HearthError)?.message.hasPrefix("this server is not part of a cluster") == true,
                    "\(error)")
            }
            do {
                _ = try await db.failover(to: "n2")
                XCTFail("a standalone server answered failover")
            } catch {
                XCTAssertEqual(error.hearthCode, .notClustered)
            }
        }
    }
}
