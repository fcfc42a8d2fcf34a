import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Exactly-once writes (docs/PROTOCOL.md, "Write ids"): a write retried with the same `wid` is
/// answered with its first answer and `duplicate`, never applied twice — on another connection,
/// after a restart, a `kill -9` or a compaction; a forgotten one is refused, not applied.
final class WriteIDTests: XCTestCase {
    func testRetriedIncrementIsAppliedOnce() async throws {
        try await withLiveServer { server in
            let first = try TestClient(port: server.port)
            let line = #"{"op":"set","id":1,"path":"/n","value":{".sv":{"increment":1}},"wid":"app-1:1"}"#
            let answer = try first.request(line)
            XCTAssertEqual(answer, json(#"{"id":1,"ok":true,"rev":1}"#))
            first.close()
            // The answer was "lost"; the client retries on a new connection.
            let second = try TestClient(port: server.port)
            XCTAssertEqual(try second.request(line), json(#"{"id":1,"ok":true,"rev":1,"duplicate":true}"#))
            XCTAssertEqual(try second.request(line)["duplicate"], .bool(true))
            XCTAssertEqual(try second.request(#"{"op":"get","path":"/n"}"#)["value"], .int(1))
            // Another sequence number is another write.
            let next = try second.request(
                #"{"op":"set","path":"/n","value":{".sv":{"increment":1}},"wid":"app-1:2"}"#)
            XCTAssertEqual(next["rev"], .int(2))
            XCTAssertNil(next["duplicate"])
            XCTAssertEqual(try second.request(#"{"op":"get","path":"/n"}"#)["value"], .int(2))
        }
    }

    func testRetriedPushKeepsItsKeyAndAddsOneChild() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let line = #"{"op":"push","path":"/list","value":"x","wid":"app-1:7"}"#
            let answer = try c.request(line)
            let key = try XCTUnwrap(answer["key"]?.stringValue)
            let retry = try TestClient(port: server.port).request(line)
            XCTAssertEqual(retry["key"], .string(key))
            XCTAssertEqual(retry["rev"], answer["rev"])
            XCTAssertEqual(retry["duplicate"], .bool(true))
            let list = try c.request(#"{"op":"get","path":"/list"}"#)["value"]
            XCTAssertEqual(list?.objectMembers?.map(\.key), [key])
        }
    }

    func testRetriedTransactionCommitsOnceAndAStaleOneIsNotRemembered() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/t","value":5}"#)
            // A transaction that did not commit is not remembered: its retry is judged afresh.
            let stale = try c.request(#"{"op":"transaction","path":"/t","value":7,"expect":4,"wid":"tx:1"}"#)
            XCTAssertEqual(stale["committed"], .bool(false))
            let line = #"{"op":"transaction","path":"/t","value":{".sv":{"increment":10}},"expect":5,"wid":"tx:1"}"#
            let committed = try c.request(line)
            XCTAssertEqual(committed["committed"], .bool(true))
            XCTAssertNil(committed["duplicate"])
            let retry = try TestClient(port: server.port).request(line)
            XCTAssertEqual(retry, json(#"{"id":null,"ok":true,"committed":true,"rev":2,"duplicate":true}"#))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/t"}"#)["value"], .int(15))
        }
    }

    /// Both copies in one engine turn: the second is answered from the first, after it.
    func testPipelinedDuplicateInOneBatch() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let line = #"{"op":"update","path":"/u","values":{"a":{".sv":{"increment":1}}},"wid":"p:1"}"#
            try c.sendRaw(Array((line + "\n" + line + "\n").utf8))
            let first = try c.readResponse()
            let second = try c.readResponse()
            XCTAssertEqual(first, json(#"{"id":null,"ok":true,"rev":1}"#))
            XCTAssertEqual(second, json(#"{"id":null,"ok":true,"rev":1,"duplicate":true}"#))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/u/a"}"#)["value"], .int(1))
        }
    }

    func testEvictedIdIsRefusedAsExpiredAndNotApplied() async throws {
        try await withLiveServer(setting: \.writeIdWindow, to: 3) { server in
            let c = try TestClient(port: server.port)
            for n in 1...5 {
                try c.request(#"{"op":"set","path":"/e/\#(n)","value":{".sv":{"increment":1}},"wid":"w:\#(n)"}"#)
            }
            let rev = try c.request(#"{"op":"get","path":"/"}"#)["rev"]
            for n in 1...2 {
                let retry = try c.request(
                    #"{"op":"set","path":"/e/\#(n)","value":{".sv":{"increment":1}},"wid":"w:\#(n)"}"#)
                XCTAssertEqual(retry.errorCode, "write_id_expired")
                XCTAssertEqual(
                    retry["error"]?["message"],
                    .string(
                        "the outcome of write w:\(n) is no longer remembered (writeIdWindow); it was not applied again")
                )
            }
            for n in 3...5 {
                let retry = try c.request(
                    #"{"op":"set","path":"/e/\#(n)","value":{".sv":{"increment":1}},"wid":"w:\#(n)"}"#)
                XCTAssertEqual(retry["duplicate"], .bool(true), "w:\(n)")
                XCTAssertEqual(retry["rev"], .int(Int64(n)))
            }
            let state = try c.request(#"{"op":"get","path":"/"}"#)
            XCTAssertEqual(state["rev"], rev, "nothing was applied")
            XCTAssertEqual(state["value"], json(#"{"e":{"1":1,"2":1,"3":1,"4":1,"5":1}}"#))
            // Another client's ids are its own; a new number of this one is applied.
            XCTAssertNil(try c.request(#"{"op":"set","path":"/x","value":1,"wid":"other:1"}"#)["duplicate"])
            XCTAssertEqual(try c.request(#"{"op":"set","path":"/x","value":2,"wid":"w:6"}"#)["rev"], .int(7))
        }
    }

    func testMalformedWriteIDsAreBadRequests() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let invalid = [
                #""""#, #""c""#, #""c:""#, #"":1""#, #""c:0""#, #""c:01""#, #""c:9007199254740992""#, #""c:-1""#,
                #""c:1.5""#, #""c:+1""#, #""c d:1""#, #""c:1 ""#, #""é:1""#, #""c.d:1""#, "5", "null", #"["c:1"]"#,
                "\"\(String(repeating: "a", count: 65)):1\"",
            ]
            for wid in invalid {
                let answer = try c.request(#"{"op":"set","id":3,"path":"/v","value":1,"wid":\#(wid)}"#)
                XCTAssertEqual(answer.errorCode, "bad_request", wid)
                XCTAssertEqual(answer["id"], .int(3))
                XCTAssertTrue(answer["error"]?["message"]?.stringValue?.contains("wid") == true, wid)
            }
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/v"}"#)["value"], .null, "nothing was applied")
            let valid = ["a:9007199254740991", "\(String(repeating: "Z", count: 64)):1", "A_b-9:10"]
            for wid in valid {
                XCTAssertEqual(
                    try c.request(#"{"op":"set","path":"/v","value":1,"wid":"\#(wid)"}"#)["ok"], .bool(true), wid)
            }
            for op in ["update", "remove", "setPriority", "push"] {
                let fields: String
                switch op {
                case "update": fields = #""values":{"a":1}"#
                case "setPriority": fields = #""priority":1"#
                case "push": fields = #""value":1"#
                default: fields = #""x":0"#
                }
                XCTAssertEqual(
                    try c.request(#"{"op":"\#(op)","path":"/w",\#(fields),"wid":"q:\#(op.count)"}"#)["ok"],
                    .bool(true), op)
            }
        }
    }

    func testWriteIDOnlyOnWrites() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            for line in [
                #"{"op":"get","path":"/","wid":"c:1"}"#, #"{"op":"subscribe","path":"/","wid":"c:1"}"#,
                #"{"op":"ping","wid":"c:1"}"#, #"{"op":"onDisconnect","action":"remove","path":"/a","wid":"c:1"}"#,
                #"{"op":"get","path":"/","wid":"not an id"}"#,
            ] {
                let answer = try c.request(line)
                XCTAssertEqual(answer.errorCode, "bad_request", line)
                XCTAssertEqual(
                    answer["error"]?["message"],
                    .string("wid is only accepted on writes (set, update, remove, push, setPriority, transaction)"),
                    line)
            }
            XCTAssertEqual(c.events, [], "the subscribe created nothing")
        }
    }

    func testDeniedWriteIsNotRemembered() async throws {
        let rules = try temporaryFile(
            #"{"rules":{".read":true,"gate":{".write":true},"d":{".write":"root.child('gate').val() === true"}}}"#)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        try await withLiveServer(setting: \.rulesFile, to: rules) { server in
            let c = try TestClient(port: server.port)
            let line = #"{"op":"set","path":"/d","value":{".sv":{"increment":1}},"wid":"r:1"}"#
            XCTAssertEqual(try c.request(line).errorCode, "permission_denied")
            XCTAssertEqual(try c.request(#"{"op":"set","path":"/gate","value":true}"#)["rev"], .int(1))
            let applied = try c.request(line)
            XCTAssertEqual(applied["rev"], .int(2))
            XCTAssertNil(applied["duplicate"])
            XCTAssertEqual(try c.request(line)["duplicate"], .bool(true))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/d"}"#)["value"], .int(1))
        }
    }

    /// A client that made no write with an id for `writeIdRetentionSeconds` is forgotten, in
    /// the running server and in one restarted later: its retry is applied again.
    func testIdleClientIsForgottenAfterTheRetention() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = TestClock()
        var configuration = FailingDisk.configuration(directory)
        configuration.writeIdRetentionSeconds = 60
        var server = try await HearthServer.start(configuration: configuration, logger: quietLogger, clock: clock.read)
        var c = try TestClient(port: server.port)
        let first = #"{"op":"set","path":"/n","value":{".sv":{"increment":1}},"wid":"idle:1"}"#
        let other = #"{"op":"set","path":"/m","value":{".sv":{"increment":1}},"wid":"busy:1"}"#
        try c.request(first)
        clock.now += 59_000
        XCTAssertEqual(try c.request(first)["duplicate"], .bool(true), "within the retention")
        try c.request(other)
        clock.now += 2_000
        XCTAssertNil(try c.request(first)["duplicate"], "idle for 61 s: applied again")
        XCTAssertEqual(try c.request(#"{"op":"get","path":"/n"}"#)["value"], .int(2))
        XCTAssertEqual(try c.request(other)["duplicate"], .bool(true))
        await server.shutdown()

        clock.now += 59_000
        server = try await HearthServer.start(configuration: configuration, logger: quietLogger, clock: clock.read)
        c = try TestClient(port: server.port)
        XCTAssertEqual(try c.request(first)["duplicate"], .bool(true), "applied again 59 s ago")
        XCTAssertNil(try c.request(other)["duplicate"], "idle for 61 s across the restart")
        XCTAssertEqual(try c.request(#"{"op":"get","path":"/m"}"#)["value"], .int(2))
        await server.shutdown()
    }

    func testSettingsLoadFromTheConfigurationFile() throws {
        var configuration = ServerConfiguration()
        XCTAssertEqual(configuration.writeIdWindow, 1000)
        XCTAssertEqual(configuration.writeIdRetentionSeconds, 3600)
        XCTAssertEqual(configuration.changeLogRevisions, 10_000)
        try configuration.apply(
            file: json(#"{"writeIdWindow":5,"writeIdRetentionSeconds":60,"changeLogRevisions":0}"#), source: "f")
        XCTAssertEqual(configuration.writeIdWindow, 5)
        XCTAssertEqual(configuration.writeIdRetentionSeconds, 60)
        XCTAssertEqual(configuration.changeLogRevisions, 0)
        for bad in [#"{"writeIdWindow":-1}"#, #"{"writeIdRetentionSeconds":0}"#, #"{"changeLogRevisions":"many"}"#] {
            XCTAssertThrowsError(try configuration.apply(file: json(bad), source: "f"), bad)
        }
    }

    // MARK: Durability

    func testWindowSurvivesARestart() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let line = #"{"op":"push","path":"/p","value":{".sv":{"increment":1}},"wid":"dev:42"}"#
        var server = try await startServer(directory)
        let first = try TestClient(port: server.port).request(line)
        await server.shutdown()

        server = try await startServer(directory)
        let c = try TestClient(port: server.port)
        let retry = try c.request(line)
        XCTAssertEqual(retry["key"], first["key"])
        XCTAssertEqual(retry["rev"], first["rev"])
        XCTAssertEqual(retry["duplicate"], .bool(true))
        XCTAssertEqual(try c.request(#"{"op":"get","path":"/p"}"#)["value"]?.objectMembers?.count, 1)
        await server.shutdown()
    }

    /// The real `hearthd` killed with SIGKILL right after acknowledging: the retry after the
    /// restart is a duplicate.
    func testWindowSurvivesKillNine() throws {
        let binary = try HearthdProcess.binaryURL()
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let line = #"{"op":"set","path":"/n","value":{".sv":{"increment":1}},"wid":"k9:1"}"#
        var server = try HearthdProcess.start(binary: binary, dataDir: directory)
        let first = try TestClient(port: server.port).request(line)
        XCTAssertEqual(first["ok"], .bool(true))
        server.kill9()

        server = try HearthdProcess.start(binary: binary, dataDir: directory)
        let c = try TestClient(port: server.port)
        let retry = try c.request(line)
        XCTAssertEqual(retry["rev"], first["rev"])
        XCTAssertEqual(retry["duplicate"], .bool(true))
        XCTAssertEqual(try c.request(#"{"op":"get","path":"/n"}"#)["value"], .int(1))
        try server.terminate()
    }

    /// The window is carried across compaction in the snapshot: ids whose log records the
    /// compaction removed are still duplicates (or still expired) after a restart.
    func testWindowSurvivesCompaction() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func configure(_ c: inout ServerConfiguration) {
            c.compactionMinBytes = 1024
            c.compactionRatio = 0.01
            c.writeIdWindow = 2
        }
        var server = try await startServer(directory, configure)
        var c = try TestClient(port: server.port)
        var answers: [JSONValue] = []
        for n in 1...3 {
            answers.append(try c.request(#"{"op":"push","path":"/q","value":\#(n),"wid":"cmp:\#(n)"}"#))
        }
        let transaction = try c.request(#"{"op":"transaction","path":"/t","value":1,"expect":null,"wid":"cmp-t:1"}"#)
        let widRev = try XCTUnwrap(transaction["rev"]?.int64Value)
        // Enough log for a compaction, in writes after the ones with ids.
        let padding = String(repeating: "x", count: 2000)
        for i in 0..<3 { try c.request(#"{"op":"set","path":"/pad/\#(i)","value":"\#(padding)"}"#) }
        await server.shutdown()  // waits for the compaction
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        let snapshots = names.filter { $0.hasPrefix("snapshot-") }.compactMap { UInt64($0.dropFirst(9)) }
        XCTAssertGreaterThan(snapshots.max() ?? 0, UInt64(widRev), "a snapshot covers the writes with ids: \(names)")
        let segments = names.filter { $0.hasPrefix("wal-") }.compactMap { UInt64($0.dropFirst(4).dropLast(4)) }
        XCTAssertTrue(segments.allSatisfy { $0 > UInt64(widRev) }, "their log records are gone: \(names)")

        server = try await startServer(directory, configure)
        c = try TestClient(port: server.port)
        let expired = try c.request(#"{"op":"push","path":"/q","value":1,"wid":"cmp:1"}"#)
        XCTAssertEqual(expired.errorCode, "write_id_expired")
        for n in 2...3 {
            let retry = try c.request(#"{"op":"push","path":"/q","value":\#(n),"wid":"cmp:\#(n)"}"#)
            XCTAssertEqual(retry["key"], answers[n - 1]["key"])
            XCTAssertEqual(retry["rev"], answers[n - 1]["rev"])
            XCTAssertEqual(retry["duplicate"], .bool(true))
        }
        let retry = try c.request(#"{"op":"transaction","path":"/t","value":1,"expect":null,"wid":"cmp-t:1"}"#)
        XCTAssertEqual(retry["committed"], .bool(true))
        XCTAssertEqual(retry["rev"], transaction["rev"])
        XCTAssertEqual(retry["duplicate"], .bool(true))
        XCTAssertEqual(try c.request(#"{"op":"get","path":"/q"}"#)["value"]?.objectMembers?.count, 3)
        await server.shutdown()
    }

    /// A write the log refused was not applied, so it is not remembered: its retry after the
    /// restart is applied.
    func testWriteRefusedByTheStorageIsNotRemembered() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = FailingDisk()
        var server = try await disk.startServer(in: directory)
        var c = try TestClient(port: server.port)
        let line = #"{"op":"set","path":"/f","value":{".sv":{"increment":1}},"wid":"fd:1"}"#
        disk.failWrites(true)
        XCTAssertEqual(try c.request(line).errorCode, "unavailable")
        disk.failWrites(false)
        XCTAssertEqual(try c.request(line).errorCode, "unavailable")
        await server.shutdown()

        server = try await startServer(directory)
        c = try TestClient(port: server.port)
        let applied = try c.request(line)
        XCTAssertEqual(applied["rev"], .int(1))
        XCTAssertNil(applied["duplicate"])
        XCTAssertEqual(try c.request(#"{"op":"get","path":"/f"}"#)["value"], .int(1))
        await server.shutdown()
    }
}

/// A loopback server over `directory` (fsync always, no HTTP listener), for tests that restart.
func startServer(
    _ directory: String, _ configure: (inout ServerConfiguration) -> Void = { _ in }
) async throws -> HearthServer {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.httpPort = nil
    configuration.dataDirectory = directory
    configuration.fsync = .always
    configure(&configuration)
    return try await HearthServer.start(configuration: configuration, logger: quietLogger)
}
