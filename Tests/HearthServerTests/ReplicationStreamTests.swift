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

/// Roles fixed by the test instead of elected (the election itself is tested on a real etcd in
/// ClusterFailoverTests): the replication stream, forwarding and events between two real servers
/// over real sockets.
final class FixedMembership: ClusterMembership, @unchecked Sendable {
    private let state = NIOLockedValueBox<
        (leader: (node: String, tcp: String, epoch: UInt64)?, proof: Bool, checksLeft: Int?)
    >((nil, true, nil))

    func hasLeadershipProof() -> Bool {
        state.withLockedValue { state in
            guard let left = state.checksLeft else { return state.proof }
            state.checksLeft = max(0, left - 1)
            return left > 0
        }
    }
    func publish(state: MemberState, rev: UInt64, lastEpoch: UInt64, confirmedRev: UInt64?, confirmedSeen: UInt64) {}
    func members() -> [MemberInfo] { [] }
    func leader() -> (node: String, tcp: String, epoch: UInt64)? { state.withLockedValue { $0.leader } }
    func resign(to target: String, done: @escaping @Sendable (Result<UInt64, DatabaseError>) -> Void) {
        done(.failure(DatabaseError(.unavailable, "fixed membership")))
    }

    func set(leader: (node: String, tcp: String, epoch: UInt64)?) { state.withLockedValue { $0.leader = leader } }
    func set(proof: Bool) { state.withLockedValue { $0.proof = proof } }
    /// The proof holds for the next `checks` checks, then runs out.
    func set(proofForChecks checks: Int) { state.withLockedValue { $0.checksLeft = checks } }
}

final class ReplicationStreamTests: XCTestCase {
    struct Node {
        let server: HearthServer
        let membership: FixedMembership
        let directory: String

        var node: ClusterNode { server.clusterNode.withLockedValue { $0! } }
        var address: String { "127.0.0.1:\(server.port)" }
    }

    var started: [Node] = []

    /// Quiet, unless HEARTH_TEST_LOG is set (debugging a cluster test).
    static func logger(_ node: String) -> Logger {
        guard ProcessInfo.processInfo.environment["HEARTH_TEST_LOG"] != nil else { return quietLogger }
        var logger = Logger(label: node) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .debug
        return logger
    }

    override func tearDown() async throws {
        for node in started {
            await node.server.shutdown()
            try? FileManager.default.removeItem(atPath: node.directory)
        }
        started = []
    }

    func startNode(
        _ name: String, directory: String? = nil, syncReplicas: Int = 0, http: Bool = false, pki: TestPKI? = nil,
        maxMessageBytes: Int? = nil, rulesFile: String? = nil, fileSystem: any FileSystem = PosixFileSystem(),
        fsync: FsyncPolicy = .never
    ) async throws -> Node {
        var configuration = ServerConfiguration()
        configuration.rulesFile = rulesFile
        if let maxMessageBytes { configuration.maxMessageBytes = maxMessageBytes }
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = http ? 0 : nil
        configuration.tlsCertificate = pki?.path("server.crt")
        configuration.tlsKey = pki?.path("server.key")
        configuration.dataDirectory = directory ?? temporaryDataDirectory()
        configuration.fsync = fsync
        let membership = FixedMembership()
        let server = try await HearthServer.start(
            configuration: configuration, fileSystem: fileSystem, logger: Self.logger(name),
            cluster: ClusterSetup(
                node: name, name: "test", secret: "peer-secret", syncReplicas: syncReplicas, syncTimeoutMs: 2000,
                membership: membership, peerCA: pki?.path("ca.crt")))
        let node = Node(server: server, membership: membership, directory: configuration.dataDirectory)
        started.append(node)
        return node
    }

    func lead(_ leader: Node, epoch: UInt64, followers: [Node]) {
        for node in [leader] + followers {
            node.membership.set(leader: ("leader", leader.address, epoch))
        }
        leader.node.assign(.leader(epoch: epoch))
        for follower in followers { follower.node.assign(.replica(leader: leader.address, epoch: epoch)) }
    }

    /// The files of `directory` whose names start with `prefix`, in order, and the JSON of the first.
    func filesAside(in directory: String, prefix: String) throws -> (names: [String], first: JSONValue?) {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(prefix) }
            .sorted()
        guard let name = names.first else { return (names, nil) }
        return (names, try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))))
    }

    /// Polls `get` on `port` until `path` holds `expected`.
    func waitForValue(_ port: Int, _ path: String, _ expected: JSONValue, timeout: Double = 10) throws {
        let client = try TestClient(port: port)
        let deadline = Date().addingTimeInterval(timeout)
        var last: JSONValue = .null
        while Date() < deadline {
            last = try client.request(#"{"op":"get","path":"\#(path)"}"#)["value"] ?? .null
            if last == expected { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTFail("\(path) on port \(port) is \(last), expected \(expected)")
    }

    /// Waits until a read of `path` on `port` fails with `code` (what a node's stream brings,
    /// the data and then the rules, takes a turn or two on a busy machine).
    func waitForError(_ port: Int, _ path: String, _ code: String, timeout: Double = 10) throws {
        let client = try TestClient(port: port)
        let deadline = Date().addingTimeInterval(timeout)
        var last: JSONValue = .null
        while Date() < deadline {
            last = try client.request(#"{"op":"get","path":"\#(path)"}"#)
            if last["error"]?["code"] == .string(code) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTFail("\(path) on port \(port) answers \(last), expected \(code)")
    }

    func testReplicaStreamsTheLeadersWritesAndRaisesTheSameEvents() async throws {
        let leader = try await startNode("leader")
        let replica = try await startNode("replica")
        leader.node.assign(.leader(epoch: 7))
        let writer = try TestClient(port: leader.server.port)
        XCTAssertEqual(
            try writer.request(#"{"op":"set","path":"/before","value":"written before the replica joined"}"#)["ok"],
            .bool(true))
        lead(leader, epoch: 7, followers: [replica])
        try waitForValue(replica.server.port, "/before", .string("written before the replica joined"))

        let subscriber = try TestClient(port: replica.server.port)
        XCTAssertEqual(subscriber.hello["cluster"]?["role"], .string("replica"), "\(subscriber.hello)")
        let subscribed = try subscriber.request(
            #"{"op":"subscribe","path":"/scores","events":["child_added","child_changed"]}"#)
        XCTAssertEqual(subscribed["ok"], .bool(true))
        for i in 1...20 {
            try writer.request(#"{"op":"set","path":"/scores/p\#(i % 5)","value":\#(i)}"#)
        }
        var seen: [(String, Int64)] = []
        while seen.count < 20 {
            let event = try subscriber.readJSON()
            if case .string(let type)? = event["event"], let value = event["value"]?.int64Value {
                seen.append((type, value))
            }
        }
        XCTAssertEqual(seen.map(\.1), Array(1...20).map(Int64.init), "events in the leader's order")
        XCTAssertEqual(seen.prefix(5).map(\.0), Array(repeating: "child_added", count: 5))
        XCTAssertEqual(seen.dropFirst(5).map(\.0), Array(repeating: "child_changed", count: 15))
        let leaderRev = try writer.request(#"{"op":"get","path":"/"}"#)["rev"]
        XCTAssertEqual(try subscriber.request(#"{"op":"get","path":"/"}"#)["rev"], leaderRev, "same revisions")
    }

    func testAWriteThroughAReplicaIsReadBackAtOnceThere() async throws {
        let leader = try await startNode("leader")
        let replica = try await startNode("replica")
        lead(leader, epoch: 3, followers: [replica])
        try waitForValue(replica.server.port, "/", .null)
        let client = try TestClient(port: replica.server.port)
        for i in 1...50 {
            let answer = try client.request(#"{"op":"set","path":"/items/\#(i)","value":\#(i),"wid":"c1:\#(i)"}"#)
            XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
            let read = try client.request(#"{"op":"get","path":"/items/\#(i)"}"#)
            XCTAssertEqual(read["value"], .int(Int64(i)), "read-your-writes on the replica")
            XCTAssertGreaterThanOrEqual(read["rev"]?.int64Value ?? 0, answer["rev"]?.int64Value ?? .max)
        }
        let pushed = try client.request(#"{"op":"push","path":"/log","value":{"a":1}}"#)
        let key = try XCTUnwrap(pushed["key"]?.stringValue)
        XCTAssertEqual(try client.request(#"{"op":"get","path":"/log/\#(key)/a"}"#)["value"], .int(1))
        // A retried write id is recognised by the leader and not applied again.
        let again = try client.request(#"{"op":"set","path":"/items/1","value":"changed","wid":"c1:1"}"#)
        XCTAssertEqual(again["duplicate"], .bool(true), "\(again)")
        let onLeader = try TestClient(port: leader.server.port)
        XCTAssertEqual(try onLeader.request(#"{"op":"get","path":"/items/1"}"#)["value"], .int(1))
        // A transaction through the replica: the leader decides.
        let stale = try client.request(#"{"op":"transaction","path":"/items/2","value":20,"expect":99}"#)
        XCTAssertEqual(stale["committed"], .bool(false))
        XCTAssertEqual(stale["value"], .int(2))
        let committed = try client.request(#"{"op":"transaction","path":"/items/2","value":20,"expect":2}"#)
        XCTAssertEqual(committed["committed"], .bool(true), "\(committed)")
        XCTAssertEqual(try client.request(#"{"op":"get","path":"/items/2"}"#)["value"], .int(20))
    }

    func testAConnectionToALeaderThatStepsDownHasItsLaterWritesForwarded() async throws {
        // A leader's connections keep no request text (nothing to forward); once it follows
        // another leader, the same connections' writes must be forwarded again.
        let first = try await startNode("first")
        let second = try await startNode("second")
        lead(first, epoch: 3, followers: [second])
        let client = try TestClient(port: first.server.port)
        XCTAssertEqual(try client.request(#"{"op":"set","path":"/x","value":1,"wid":"c:1"}"#)["ok"], .bool(true))
        try waitForValue(second.server.port, "/x", .int(1))
        XCTAssertTrue(first.server.engine.isLeading)
        XCTAssertFalse(second.server.engine.isLeading)

        lead(second, epoch: 4, followers: [first])
        var answer = try client.request(#"{"op":"set","path":"/x","value":2,"wid":"c:2"}"#)
        for _ in 0..<100 where answer["ok"] != .bool(true) {  // until the first node follows
            XCTAssertEqual(answer["error"]?["code"], .string("unavailable"), "\(answer)")
            try await Task.sleep(for: .milliseconds(50))
            answer = try client.request(#"{"op":"set","path":"/x","value":2,"wid":"c:2"}"#)
        }
        XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        XCTAssertFalse(first.server.engine.isLeading)
        XCTAssertTrue(second.server.engine.isLeading)
        let onSecond = try TestClient(port: second.server.port)
        XCTAssertEqual(try onSecond.request(#"{"op":"get","path":"/x"}"#)["value"], .int(2))
    }

    func testPeersSpeakTLSWhenTheListenersDo() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let leader = try await startNode("leader", pki: pki)
        let replica = try await startNode("replica", pki: pki)
        lead(leader, epoch: 3, followers: [replica])
        let client = try await TLSTestClient(port: replica.server.port, trusting: pki.path("ca.crt"))
        let answer = try await client.request(#"{"op":"set","id":1,"path":"/secure","value":"over TLS"}"#)
        XCTAssertEqual(answer["ok"], .bool(true), "a write forwarded over the TLS peer link: \(answer)")
        let (root, _) = try await leader.server.snapshot()
        XCTAssertEqual(
            String(decoding: root.child(at: try Path.parse("/secure")).jsonBytes(), as: UTF8.self), #""over TLS""#)
        await client.close()
    }

    /// The forward envelope makes a request at the size limit longer than the limit: the leader
    /// takes it from its peer, and still holds its own clients to the limit.
    func testARequestAtTheSizeLimitIsForwardedWhole() async throws {
        let limit = 4096
        let leader = try await startNode("leader", maxMessageBytes: limit)
        let replica = try await startNode("replica", maxMessageBytes: limit)
        lead(leader, epoch: 3, followers: [replica])
        let prefix = #"{"op":"set","id":1,"path":"/big","value":""#
        func line(_ length: Int) -> String {
            prefix + String(repeating: "x", count: length - prefix.utf8.count - 2) + #""}"#
        }
        XCTAssertEqual(line(limit).utf8.count, limit)
        let client = try TestClient(port: replica.server.port)
        let answer = try client.request(line(limit))
        XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")
        let stored = try TestClient(port: leader.server.port).request(#"{"op":"get","path":"/big"}"#)["value"]
        XCTAssertEqual(stored?.stringValue?.count, limit - prefix.utf8.count - 2)
        // The link survived: a later write through the replica is answered at once.
        XCTAssertEqual(try client.request(#"{"op":"set","path":"/after","value":1}"#)["ok"], .bool(true))

        let direct = try TestClient(port: leader.server.port)
        let refused = try direct.request(line(limit + 1))
        XCTAssertEqual(refused["error"]?["code"], .string("too_large"), "\(refused)")
        XCTAssertTrue(direct.waitForClose())
    }

    func testAnHTTPWriteToAReplicaIsForwardedAndAnsweredWithTheStoredValue() async throws {
        let leader = try await startNode("leader")
        let replica = try await startNode("replica", http: true)
        lead(leader, epoch: 2, followers: [replica])
        try waitForValue(replica.server.port, "/", .null)
        let http = try HTTPTestClient(port: try XCTUnwrap(replica.server.httpPort))
        let put = try http.request("PUT", "/users/ada.json", body: #"{"name":"Ada","born":1815}"#)
        XCTAssertEqual(put.status, 200, String(decoding: put.body, as: UTF8.self))
        XCTAssertEqual(try JSONParser.parse(put.body)["name"], .string("Ada"))
        let post = try http.request("POST", "/log.json", body: #""entry""#)
        XCTAssertEqual(post.status, 200)
        let key = try XCTUnwrap(try JSONParser.parse(post.body)["name"]?.stringValue)
        let onLeader = try TestClient(port: leader.server.port)
        XCTAssertEqual(try onLeader.request(#"{"op":"get","path":"/users/ada/born"}"#)["value"], .int(1815))
        XCTAssertEqual(try onLeader.request(#"{"op":"get","path":"/log/\#(key)"}"#)["value"], .string("entry"))
    }

    func testMetricsShowRolesAndLagAndHealthShowsAReplicaThatDoesNotStream() async throws {
        let leader = try await startNode("leader", http: true)
        let replica = try await startNode("replica", http: true)
        lead(leader, epoch: 6, followers: [replica])
        let writer = try TestClient(port: leader.server.port)
        XCTAssertEqual(try writer.request(#"{"op":"set","path":"/m","value":1}"#)["ok"], .bool(true))
        try waitForValue(replica.server.port, "/m", .int(1))
        try await Task.sleep(for: .milliseconds(300))  // a cluster tick publishes the gauges
        let metrics = try HTTPTestClient(port: try XCTUnwrap(leader.server.httpPort))
            .request("GET", "/.well-known/hearth/metrics")
        let text = String(decoding: metrics.body, as: UTF8.self)
        XCTAssertTrue(text.contains("hearth_cluster_leader 1"), text)
        XCTAssertTrue(text.contains("hearth_cluster_epoch 6"), text)
        XCTAssertTrue(text.contains(#"hearth_cluster_replica_lag_revs{replica="replica"} 0"#), text)
        XCTAssertTrue(text.contains("hearth_cluster_streaming_replicas 1"), text)
        let healthy = try HTTPTestClient(port: try XCTUnwrap(replica.server.httpPort))
            .request("GET", "/.well-known/hearth/health")
        XCTAssertEqual(try JSONParser.parse(healthy.body)["status"], .string("ok"))
        await leader.server.shutdown()
        var status: JSONValue?
        for _ in 0..<50 {
            let health = try HTTPTestClient(port: try XCTUnwrap(replica.server.httpPort))
                .request("GET", "/.well-known/hearth/health")
            status = try JSONParser.parse(health.body)["status"]
            if status == .string("degraded") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(status, .string("degraded"), "a replica that lost its leader")
    }

    func testAReplicaTooFarBehindGetsASnapshotAndOneThatForkedMovesItsRecordsAside() async throws {
        let leader = try await startNode("leader")
        leader.node.assign(.leader(epoch: 9))
        let writer = try TestClient(port: leader.server.port)
        for i in 1...5 {
            XCTAssertEqual(try writer.request(#"{"op":"set","path":"/a/\#(i)","value":\#(i)}"#)["ok"], .bool(true))
        }
        // A node that wrote records of its own in an epoch the leader never had.
        let stray = try await startNode("stray")
        stray.node.assign(.leader(epoch: 2))
        let strayWriter = try TestClient(port: stray.server.port)
        for i in 1...3 {
            XCTAssertEqual(
                try strayWriter.request(#"{"op":"set","path":"/stray/\#(i)","value":\#(i)}"#)["ok"], .bool(true))
        }
        lead(leader, epoch: 9, followers: [stray])
        try waitForValue(stray.server.port, "/a/5", .int(5))
        try waitForValue(stray.server.port, "/stray", .null)
        let (files, moved) = try filesAside(in: stray.directory, prefix: "divergent-")
        XCTAssertEqual(files, ["divergent-2-1.json"])
        XCTAssertEqual(moved?["fromRev"], .int(1))
        XCTAssertEqual(moved?["toRev"], .int(3))
        guard case .array(let records)? = moved?["records"] else {
            return XCTFail("no records in \(String(describing: moved))")
        }
        XCTAssertEqual(records.count, 3)
        XCTAssertEqual(records.first?["path"], .string("/stray/1"))
        // The former stray now follows: later writes arrive.
        try writer.request(#"{"op":"set","path":"/after","value":true}"#)
        try waitForValue(stray.server.port, "/after", .bool(true))
    }

    /// A directory with data of its own (written by a standalone server) that joins a cluster
    /// shares nothing with the leader, whatever the revisions: its records, or its whole data when
    /// a compaction folded them, go aside, and it takes the leader's data.
    func testADirectoryWithDataOfItsOwnSharesNothingWithTheLeader() async throws {
        func standalone(_ writes: [(String, String)], compacting: Bool) async throws -> String {
            var configuration = ServerConfiguration()
            configuration.host = "127.0.0.1"
            configuration.port = 0
            configuration.dataDirectory = temporaryDataDirectory()
            configuration.fsync = .never
            if compacting {
                configuration.compactionMinBytes = 1
                configuration.compactionRatio = 0.01
            }
            let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
            let client = try TestClient(port: server.port)
            for (path, value) in writes {
                XCTAssertEqual(
                    try client.request(#"{"op":"set","path":"\#(path)","value":"\#(value)"}"#)["ok"], .bool(true))
                if compacting { try await Task.sleep(for: .milliseconds(100)) }
            }
            await server.shutdown()
            return configuration.dataDirectory
        }
        let theirs = try await standalone((1...5).map { ("/b/\($0)", "theirs") }, compacting: false)
        let mine = try await standalone((1...3).map { ("/a/\($0)", "mine") }, compacting: false)
        let folded = try await standalone((1...4).map { ("/c/\($0)", "folded") }, compacting: true)
        let leader = try await startNode("leader", directory: theirs)
        let replica = try await startNode("replica", directory: mine)
        let compacted = try await startNode("compacted", directory: folded)
        lead(leader, epoch: 4, followers: [replica, compacted])
        for node in [replica, compacted] {
            try waitForValue(node.server.port, "/b/5", .string("theirs"))
            XCTAssertEqual(
                try TestClient(port: node.server.port).request(#"{"op":"get","path":"/"}"#)["value"]?["a"], nil)
        }
        let (files, moved) = try filesAside(in: replica.directory, prefix: "divergent-")
        XCTAssertEqual(files, ["divergent-0-1.json"])
        guard case .array(let records)? = moved?["records"] else {
            return XCTFail("no records in \(String(describing: moved))")
        }
        XCTAssertEqual(records.map { $0["path"] }, (1...3).map { .string("/a/\($0)") })

        let (aside, data) = try filesAside(in: compacted.directory, prefix: "divergent-data-")
        XCTAssertEqual(aside, ["divergent-data-4.json"])
        XCTAssertEqual(data?["data"]?["c"]?["4"], .string("folded"))
        XCTAssertEqual(
            try TestClient(port: compacted.server.port).request(#"{"op":"get","path":"/c"}"#)["value"], .null)
    }

    /// The leader's rules are the cluster's: `setRules` sent to a replica runs on the leader, and
    /// every replica — one streaming now, one that joins later — enforces them, and keeps them in
    /// its data directory (never in its rules file, which may be read-only).
    func testRulesSetThroughAReplicaAreInForceOnEveryNode() async throws {
        let leader = try await startNode("leader")
        let rulesFile = temporaryDataDirectory() + ".rules.json"
        try Data(#"{"rules":{".read":true,".write":true}}"#.utf8).write(to: URL(fileURLWithPath: rulesFile))
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        let replica = try await startNode("replica", rulesFile: rulesFile)
        lead(leader, epoch: 2, followers: [replica])
        let client = try TestClient(port: replica.server.port)
        XCTAssertEqual(try client.request(#"{"op":"set","path":"/secret","value":"s"}"#)["ok"], .bool(true))
        let rules = #"{"rules":{".write":true,"public":{".read":true}}}"#
        let answer = try client.request(#"{"op":"setRules","rules":\#(rules)}"#)
        XCTAssertEqual(answer["ok"], .bool(true), "\(answer)")

        let late = try await startNode("late")
        lead(leader, epoch: 2, followers: [replica, late])
        try waitForError(late.server.port, "/secret", "permission_denied")
        for node in [leader, replica, late] {
            let reader = try TestClient(port: node.server.port)
            let denied = try reader.request(#"{"op":"get","path":"/secret"}"#)
            XCTAssertEqual(denied["error"]?["code"], .string("permission_denied"), "\(node.address): \(denied)")
            XCTAssertEqual(try reader.request(#"{"op":"get","path":"/public"}"#)["ok"], .bool(true))
        }
        // In the replica's data directory too: a restart keeps them. Its rules file is untouched.
        let kept = try JSONParser.parse(
            Array(try Data(contentsOf: URL(fileURLWithPath: replica.directory + "/rules.accepted.json"))))
        XCTAssertEqual(kept["document"], try JSONParser.parse(rules))
        let file = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: rulesFile))))
        XCTAssertEqual(file, try JSONParser.parse(#"{"rules":{".read":true,".write":true}}"#))
    }

    func testALeaderWithoutProofOfItsLeaseAcknowledgesNothing() async throws {
        let leader = try await startNode("leader")
        leader.node.assign(.leader(epoch: 4))
        let client = try TestClient(port: leader.server.port)
        XCTAssertEqual(try client.request(#"{"op":"set","path":"/x","value":1}"#)["ok"], .bool(true))
        leader.membership.set(proof: false)
        let refused = try client.request(#"{"op":"set","path":"/x","value":2}"#)
        XCTAssertEqual(refused["error"]?["code"], .string("unavailable"), "\(refused)")
        XCTAssertEqual(try client.request(#"{"op":"get","path":"/x"}"#)["value"], .int(1))
    }
}
