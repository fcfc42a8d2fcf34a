import Foundation
import HearthCluster
import HearthServer
import HearthTestSupport
import XCTest

@testable import HearthClient

/// A client of a real cluster (a real etcd, three servers deciding their roles in it): when the
/// node it is connected to goes, it moves to another node and resumes its subscriptions from
/// their revision (docs/cluster.md, "Clients"), so that no event is missing and none comes twice.
final class ClusterResumeTests: XCTestCase {
    func testASubscriberWhoseNodeStopsResumesOnAnotherNodeWithNoEventMissingOrTwice() async throws {
        let etcd = try await EtcdProcess.start()
        defer { etcd.stop() }
        var servers: [HearthServer] = []
        var directories: [String] = []
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        for index in 1...3 {
            var configuration = ServerConfiguration()
            configuration.host = "127.0.0.1"
            configuration.port = 0
            configuration.httpPort = nil
            configuration.fsync = .never
            configuration.dataDirectory =
                FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cluster-\(UUID().uuidString)")
                .path
            directories.append(configuration.dataDirectory)
            configuration.cluster = ClusterSettings(
                etcd: [etcd.clientURL], node: "n\(index)", advertise: "", leaseSeconds: 2)
            configuration.clusterSecret = "resume-test"
            servers.append(try await HearthServer.start(configuration: configuration, logger: quietLogger))
        }
        var running = servers
        do {
            try await resumeAcrossNodes(servers, running: &running)
        } catch {
            for server in running { await server.shutdown() }
            throw error
        }
        for server in running { await server.shutdown() }
    }

    private func resumeAcrossNodes(_ servers: [HearthServer], running: inout [HearthServer]) async throws {
        @Sendable func address(_ server: HearthServer) -> String { "127.0.0.1:\(server.port)" }
        // Which node leads, as the nodes say.
        let everyone = "hearth://" + servers.map(address).joined(separator: ",")
        let leaderAddress = Recorder<String>()
        try await eventually("a leader", timeout: 20) {
            let probe = Database(url: everyone)
            defer { probe.goOffline() }
            try await probe.waitForConnection()
            try await eventually("the cluster object") { probe.cluster != nil }
            guard let leader = probe.cluster?.leader, probe.cluster?.role != .candidate else { return false }
            leaderAddress.append(leader)
            return true
        }
        let leader = try XCTUnwrap(servers.first { address($0) == leaderAddress.all.last })
        let replica = try XCTUnwrap(servers.first { $0 !== leader })
        let others = servers.filter { $0 !== replica }

        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(20)
        configuration.reconnectMaxDelay = .milliseconds(200)
        let subscriber = Database(
            url: "hearth://" + ([replica] + others).map(address).joined(separator: ","), configuration: configuration)
        defer { subscriber.goOffline() }
        try await subscriber.waitForConnection()
        XCTAssertEqual(subscriber.connectedAddress, address(replica))
        let seen = Recorder<Int>()
        subscriber.reference(withPath: "feed").observe(.childAdded) { snapshot in
            seen.append((snapshot.value as? Int) ?? -1)
        }
        let writer = Database(url: "hearth://" + address(leader), configuration: configuration)
        defer { writer.goOffline() }
        for i in 1...40 {
            try await writer.reference(withPath: "feed/k\(1000 + i)").setValue(i)
            if i == 20 {
                try await seen.wait(for: 20, timeout: 10)
                await replica.shutdown()
                running.removeAll { $0 === replica }
            }
        }
        try await seen.wait(for: 40, timeout: 20)
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(seen.all, Array(1...40), "every event once, in order, across the change of node")
        XCTAssertNotEqual(subscriber.connectedAddress, address(replica))
    }
}
