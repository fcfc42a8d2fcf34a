import Foundation
import HearthCluster
import HearthCore
import HearthJSON
import HearthStorage
import HearthTestSupport
import Logging
import NIOConcurrencyHelpers
import XCTest

@testable import HearthServer

/// Replication and durability: what a leader and its replicas acknowledge, release and keep when
/// a proof of leadership runs out, a disk is slow, or a log or its fsync fails.
extension ReplicationStreamTests {
    /// Under syncReplicas a leader sends a batch to its replicas before its own fsync; when its
    /// proof of leadership runs out during that append, the write is "outcome unknown", the
    /// streams end, and the replica that got the batch moves it aside when it comes back.
    func testABatchStreamedBeforeAFsyncThatDidNotCountEndsUpAsideOnTheReplica() async throws {
        let leader = try await startNode("leader", syncReplicas: 1)
        let replica = try await startNode("replica", syncReplicas: 1)
        lead(leader, epoch: 6, followers: [replica])
        let client = try TestClient(port: leader.server.port)
        var answer = try client.request(#"{"op":"set","path":"/x","value":1}"#)
        for _ in 0..<100 where answer["ok"] != .bool(true) {  // until the replica streams
            try await Task.sleep(for: .milliseconds(50))
            answer = try client.request(#"{"op":"set","path":"/x","value":1}"#)
        }
        XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        let rev = try XCTUnwrap(answer["rev"]?.int64Value)

        // Checked when the request is routed and before the append; not after it.
        leader.membership.set(proofForChecks: 2)
        let unknown = try client.request(#"{"op":"set","path":"/x","value":2}"#)
        XCTAssertEqual(unknown["error"]?["code"], .string("unavailable"), "\(unknown)")
        XCTAssertTrue(unknown["error"]?["message"]?.stringValue?.contains("outcome unknown") == true, "\(unknown)")

        let name = "divergent-6-\(rev + 1).json"
        let path = replica.directory + "/" + name
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: path), Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let moved = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        guard case .array(let records)? = moved["records"] else { return XCTFail("no records in \(moved)") }
        XCTAssertEqual(records.first?["path"], .string("/x"))
        XCTAssertEqual(records.first?["value"], .int(2))
        try waitForValue(replica.server.port, "/x", .int(1))
    }

    func testUnderSyncReplicasAWriteWaitsForAReplicaOrFailsUnapplied() async throws {
        let leader = try await startNode("leader", syncReplicas: 1)
        leader.node.assign(.leader(epoch: 5))
        let client = try TestClient(port: leader.server.port)
        let refused = try client.request(#"{"op":"set","path":"/x","value":1}"#)
        XCTAssertEqual(refused["error"]?["code"], .string("unavailable"), "\(refused)")
        XCTAssertTrue(refused["error"]?["message"]?.stringValue?.contains("not enough replicas") == true)
        XCTAssertEqual(try client.request(#"{"op":"get","path":"/x"}"#)["value"], .null, "nothing applied")
        let replica = try await startNode("replica", syncReplicas: 1)
        lead(leader, epoch: 5, followers: [replica])
        try waitForValue(replica.server.port, "/", .null)
        let subscriber = try TestClient(port: replica.server.port)
        XCTAssertEqual(try subscriber.request(#"{"op":"subscribe","path":"/x","events":["value"]}"#)["ok"], .bool(true))
        let answer = try client.request(#"{"op":"set","path":"/x","value":2}"#)
        XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        // Acknowledged only once the replica holds it.
        let onReplica = try TestClient(port: replica.server.port)
        XCTAssertEqual(try onReplica.request(#"{"op":"get","path":"/x"}"#)["value"], .int(2))
        // The replica's subscriber gets the event once the replica hears the confirmation, which no
        // later write carries here: the leader sends it when idle.
        var event = try subscriber.readJSON()
        while event["value"] == .null, event["event"] != nil { event = try subscriber.readJSON() }
        XCTAssertEqual(event["value"], .int(2), "\(event)")
    }

    /// Under `syncReplicas: 1` a replica's acknowledgement releases, as soon as the leader reads
    /// it, exactly the answers and events it confirms: not those of later revisions. An answer no
    /// acknowledgement confirms fails after `syncTimeoutMs`, while its write's events wait on.
    func testAnAcknowledgementReleasesExactlyWhatItConfirms() async throws {
        let leader = try await startNode("leader", syncReplicas: 1)
        leader.node.assign(.leader(epoch: 5))
        // A replica played by the test: it reads the records and acknowledges them when told.
        let peer = try TestClient(port: leader.server.port)
        XCTAssertEqual(try peer.request(#"{"op":"auth","id":"a","token":"peer-secret"}"#)["ok"], .bool(true))
        let started = try peer.request(#"{"op":"replicate","id":"r","node":"fake","fromRev":0,"history":[]}"#)
        XCTAssertEqual(started["ok"], .bool(true), "\(started)")
        func record(_ rev: Int64) throws {
            while true {
                let line = try peer.readJSON()
                if line["event"] == .string("wal"), line["rev"] == .int(rev) { return }
            }
        }
        let subscriber = try TestClient(port: leader.server.port)
        XCTAssertEqual(try subscriber.request(#"{"op":"subscribe","path":"/x","events":["value"]}"#)["ok"], .bool(true))
        XCTAssertEqual(try subscriber.readJSON()["value"], .null)
        let client = try TestClient(port: leader.server.port)

        try client.send(#"{"id":1,"op":"set","path":"/x","value":1}"#)
        try record(1)
        try client.send(#"{"id":2,"op":"set","path":"/x","value":2}"#)
        try record(2)
        XCTAssertThrowsError(try client.readLine(timeout: 0.3), "answered before any replica had the write")
        try peer.send(#"{"op":"replicaAck","rev":1}"#)
        XCTAssertEqual(try client.readJSON(), json(#"{"id":1,"ok":true,"rev":1}"#))
        XCTAssertEqual(try subscriber.readJSON()["value"], .int(1))
        XCTAssertThrowsError(try client.readLine(timeout: 0.3), "rev 2 answered on the acknowledgement of rev 1")
        try peer.send(#"{"op":"replicaAck","rev":2}"#)
        XCTAssertEqual(try client.readJSON(), json(#"{"id":2,"ok":true,"rev":2}"#))
        XCTAssertEqual(try subscriber.readJSON()["value"], .int(2))

        try client.send(#"{"id":3,"op":"set","path":"/x","value":3}"#)
        try record(3)
        let expired = try client.readJSON(timeout: 5)
        XCTAssertEqual(expired["error"]?["code"], .string("unavailable"), "\(expired)")
        XCTAssertTrue(expired["error"]?["message"]?.stringValue?.contains("not enough replicas confirmed") == true)
        XCTAssertThrowsError(try subscriber.readLine(timeout: 0.3), "an event of an unconfirmed write went out")
        try peer.send(#"{"op":"replicaAck","rev":3}"#)
        XCTAssertEqual(try subscriber.readJSON()["value"], .int(3))
    }

    /// A replica on a slow disk (fsync always) takes a pipelined burst of sets, updates and pushes
    /// in many turns of many records each (logged ahead, acknowledged, then applied), while more
    /// keep arriving from a leader that fsyncs too and streams its long turns in slices: it ends up
    /// with the leader's data, and its log, read back on its own, recovers exactly that.
    func testAReplicaOnASlowDiskEndsWithTheLeadersDataAndItsLogRecoversIt() async throws {
        let disk = FailingDisk()
        disk.delayWrites(by: 0.004)
        let replicaDirectory = temporaryDataDirectory()
        let leader = try await startNode("leader", syncReplicas: 1, fsync: .always)
        let replica = try await startNode(
            "replica", directory: replicaDirectory, syncReplicas: 1, fileSystem: disk, fsync: .always)
        lead(leader, epoch: 3, followers: [replica])
        try waitForValue(replica.server.port, "/", .null)
        let client = try TestClient(port: leader.server.port)
        var lines = ""
        for i in 1...3_000 {
            switch i % 5 {
            case 0: lines += #"{"id":\#(i),"op":"update","path":"/u","values":{"a":\#(i),"b/c":\#(i)}}"# + "\n"
            case 1: lines += #"{"id":\#(i),"op":"push","path":"/list","value":\#(i)}"# + "\n"
            default: lines += #"{"id":\#(i),"op":"set","path":"/c/k\#(i % 7)","value":\#(i)}"# + "\n"
            }
        }
        try client.sendRaw(Array(lines.utf8))
        for i in 1...3_000 {
            let answer = try client.readResponse(timeout: 60)
            XCTAssertEqual(answer["id"], .int(Int64(i)))
            XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        }
        let expected = try client.request(#"{"op":"get","path":"/"}"#)
        XCTAssertEqual(expected["rev"], .int(3_000))
        try waitForValue(replica.server.port, "/", expected["value"] ?? .null)
        await replica.server.shutdown()
        started.removeAll { $0.directory == replicaDirectory }

        // The replica's log, read back on its own, holds every record in order.
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = replicaDirectory
        let recovered = try await HearthServer.start(configuration: configuration, logger: Self.logger("recovered"))
        defer { try? FileManager.default.removeItem(atPath: replicaDirectory) }
        let reader = try TestClient(port: recovered.port)
        let read = try reader.request(#"{"op":"get","path":"/"}"#)
        await recovered.shutdown()
        XCTAssertEqual(read["rev"], .int(3_000))
        XCTAssertEqual(read["value"], expected["value"])
    }

    /// Under `fsync: always` a replica goes on while its log's fsync runs, but acknowledges
    /// records only once that fsync ends: until then the leader answers nothing.
    func testAReplicaAcknowledgesRecordsOnlyOnceItsFsyncEnds() async throws {
        let (replica, disk, client) = try await startPair(failingDiskOnLeader: false, epoch: 5)
        XCTAssertEqual(try client.request(#"{"op":"set","path":"/n","value":1}"#)["rev"], .int(1))

        disk.holdFsyncs()
        try client.send(#"{"op":"set","path":"/n","value":2}"#)
        XCTAssertThrowsError(try client.readJSON(timeout: 0.4), "acknowledged before the replica's fsync ended")
        disk.releaseFsyncs()
        XCTAssertEqual(try client.readResponse()["rev"], .int(2))
        try waitForValue(replica.server.port, "/n", .int(2))
    }

    /// Under `fsync: always` a leader goes on while its own fsync runs: a write its replica has
    /// acknowledged is still not answered, nor shown by the replica, until the leader's fsync
    /// ends too (its `confirmedRev` waits for it).
    func testALeaderReleasesAWriteOnlyOnceItsOwnFsyncEnds() async throws {
        let (replica, disk, client) = try await startPair(failingDiskOnLeader: true, epoch: 6)
        XCTAssertEqual(try client.request(#"{"op":"set","path":"/n","value":1}"#)["rev"], .int(1))
        let subscriber = try TestClient(port: replica.server.port)
        XCTAssertEqual(try subscriber.request(#"{"op":"subscribe","path":"/n","events":["value"]}"#)["ok"], .bool(true))
        XCTAssertEqual(try subscriber.readJSON()["value"], .int(1))

        disk.holdFsyncs()
        try client.send(#"{"op":"set","path":"/n","value":2}"#)
        XCTAssertThrowsError(try client.readJSON(timeout: 0.4), "acknowledged before the leader's fsync ended")
        XCTAssertThrowsError(try subscriber.readLine(timeout: 0.1), "shown by the replica before the leader's fsync")
        disk.releaseFsyncs()
        XCTAssertEqual(try client.readResponse()["rev"], .int(2))
        XCTAssertEqual(try subscriber.readJSON()["value"], .int(2))
    }

    /// A replica acknowledges records once its log has them (it logs them before applying them):
    /// one whose disk refuses them acknowledges nothing, and shows nothing of them.
    func testAReplicaWhoseLogFailsAcknowledgesAndShowsNothingOfTheRecords() async throws {
        try await checkAReplicaWhoseLogFails { $0.failWrites(true) }
    }

    /// The same when the write succeeds and its fsync fails: the replica then applies the
    /// records as a batch whose append fails, undone with their events.
    func testAReplicaWhoseLogsFsyncFailsAcknowledgesAndShowsNothingOfTheRecords() async throws {
        try await checkAReplicaWhoseLogFails { $0.failFsyncs(true) }
    }

    /// A leader and its streaming replica under `syncReplicas: 1`, one of them on a `FailingDisk`
    /// under `fsync: always` (the other fsyncs never), and a client of the leader.
    private func startPair(
        failingDiskOnLeader: Bool, epoch: UInt64
    ) async throws -> (replica: Node, disk: FailingDisk, client: TestClient) {
        let disk = FailingDisk()
        let leader = try await startNode(
            "leader", syncReplicas: 1, fileSystem: failingDiskOnLeader ? disk : PosixFileSystem(),
            fsync: failingDiskOnLeader ? .always : .never)
        let replica = try await startNode(
            "replica", syncReplicas: 1, fileSystem: failingDiskOnLeader ? PosixFileSystem() : disk,
            fsync: failingDiskOnLeader ? .never : .always)
        lead(leader, epoch: epoch, followers: [replica])
        try waitForValue(replica.server.port, "/", .null)
        return (replica, disk, try TestClient(port: leader.server.port))
    }

    private func checkAReplicaWhoseLogFails(by failing: (FailingDisk) -> Void) async throws {
        let (replica, disk, client) = try await startPair(failingDiskOnLeader: false, epoch: 4)
        for i in 1...20 {
            let answer = try client.request(#"{"op":"set","path":"/n","value":\#(i)}"#)
            XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        }
        let onReplica = try TestClient(port: replica.server.port)
        XCTAssertEqual(try onReplica.request(#"{"op":"get","path":"/n"}"#)["value"], .int(20))
        let subscriber = try TestClient(port: replica.server.port)
        XCTAssertEqual(try subscriber.request(#"{"op":"subscribe","path":"/n","events":["value"]}"#)["ok"], .bool(true))
        XCTAssertEqual(try subscriber.readJSON()["value"], .int(20))

        failing(disk)
        let refused = try client.request(#"{"op":"set","path":"/n","value":21}"#)
        XCTAssertEqual(refused["error"]?["code"], .string("unavailable"), "\(refused)")
        XCTAssertTrue(refused["error"]?["message"]?.stringValue?.contains("not enough replicas") == true, "\(refused)")
        XCTAssertEqual(try onReplica.request(#"{"op":"get","path":"/n"}"#)["value"], .int(20), "not applied")
        XCTAssertThrowsError(try subscriber.readLine(timeout: 0.3), "an event of a write the replica's log lacks")
    }
}
