import Foundation
import HearthCore
import HearthJSON
import HearthTestSupport
import NIOSSL
import XCTest

@testable import HearthServer

/// Triggers end to end: a real server logs writes, its runner reads them back from the log and
/// POSTs signed events to a real HTTP receiver on loopback.
final class TriggerRunnerTests: XCTestCase {
    static let secret = Array("whsec-trigger-tests-0123456789abcdef".utf8)

    static func trigger(
        _ name: String = "notify", path: String = "/messages/{id}", kinds: Set<TriggerKind> = Set(TriggerKind.allCases),
        port: Int, maxAgeSeconds: Int = 86_400, maxConcurrency: Int = 8
    ) throws -> TriggerSettings {
        var settings = TriggerSettings(
            name: name, pattern: try TriggerPattern(path), kinds: kinds, url: "http://127.0.0.1:\(port)/hook",
            secret: TriggerSecret(secret))
        settings.maxAgeSeconds = maxAgeSeconds
        settings.maxConcurrency = maxConcurrency
        settings.timeoutMilliseconds = 2000
        return settings
    }

    /// Waits until `receiver` has at least `count` requests (or fails after `seconds`).
    static func waitForRequests(
        _ receiver: LoopbackReceiver, count: Int, seconds: Double = 10, file: StaticString = #filePath,
        line: UInt = #line
    ) async throws -> [LoopbackReceiver.Received] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let requests = receiver.requests
            if requests.count >= count { return requests }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        XCTFail("only \(receiver.requests.count) of \(count) deliveries arrived", file: file, line: line)
        return receiver.requests
    }

    static func bodies(_ requests: [LoopbackReceiver.Received]) throws -> [JSONValue] {
        try requests.map { try JSONParser.parse($0.body) }
    }

    /// Only matching writes are delivered, one event per changed location, with the kind, the
    /// wildcard values, the values before and after, the revision and the writer; each is signed.
    func testMatchingWritesAreDeliveredWithKindsParamsAndValues() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        let settings = try Self.trigger(port: receiver.port, maxConcurrency: 1)
        try await withLiveServer(setting: \.triggers, to: [settings]) { server in
            let client = try TestClient(port: server.port)
            _ = try client.request(#"{"op":"set","id":1,"path":"/other/x","value":1}"#)
            _ = try client.request(#"{"op":"set","id":2,"path":"/messages/m1","value":{"text":"hi"}}"#)
            _ = try client.request(#"{"op":"update","id":3,"path":"/messages/m1","values":{"text":"hello"}}"#)
            _ = try client.request(#"{"op":"set","id":4,"path":"/messages/m1/text","value":"hello"}"#)
            _ = try client.request(
                #"{"op":"update","id":5,"path":"/messages","values":{"m2":{"text":"two"},"m3":{"text":"three"}}}"#)
            _ = try client.request(#"{"op":"remove","id":6,"path":"/messages/m1"}"#)
            _ = try await Self.waitForRequests(receiver, count: 5)
            try await Task.sleep(nanoseconds: 300_000_000)
            let requests = receiver.requests
            XCTAssertEqual(requests.count, 5, "the unchanged set and the other path deliver nothing")
            guard requests.count == 5 else { return }
            let events = try Self.bodies(requests)
            XCTAssertEqual(events.map { $0["kind"] }, ["create", "update", "create", "create", "delete"])
            XCTAssertEqual(
                events.map { $0["path"] },
                ["/messages/m1", "/messages/m1", "/messages/m2", "/messages/m3", "/messages/m1"])
            XCTAssertEqual(events[0]["params"], .object(["id": "m1"]))
            XCTAssertEqual(events[0]["before"], .null)
            XCTAssertEqual(events[0]["after"], .object(["text": "hi"]))
            XCTAssertEqual(events[1]["before"], .object(["text": "hi"]))
            XCTAssertEqual(events[1]["after"], .object(["text": "hello"]))
            XCTAssertEqual(events[4]["before"], .object(["text": "hello"]))
            XCTAssertEqual(events[4]["after"], .null)
            XCTAssertEqual(events.map { $0["rev"] }, [.int(2), .int(3), .int(5), .int(5), .int(6)])
            XCTAssertEqual(events[0]["db"], "default")
            XCTAssertEqual(events[0]["trigger"], "notify")
            XCTAssertEqual(events[0]["id"], "default:notify:2:/messages/m1")
            XCTAssertEqual(events[0]["auth"], .null, "an unauthenticated writer on an open server")
            XCTAssertNotNil(events[0]["timestamp"]?.int64Value)
            for request in requests {
                XCTAssertEqual(request.method, .POST)
                XCTAssertEqual(request.uri, "/hook")
                XCTAssertEqual(request.headers.first(name: "Content-Type"), "application/json")
                let signature = try XCTUnwrap(request.headers.first(name: "Hearth-Signature"))
                let now = Int64(Date().timeIntervalSince1970)
                XCTAssertTrue(
                    signatureVerifies(
                        header: signature, body: request.body, secret: Self.secret, now: now, tolerance: 300))
                XCTAssertFalse(
                    signatureVerifies(
                        header: signature, body: request.body + [0x20], secret: Self.secret, now: now, tolerance: 300),
                    "a tampered body does not verify")
                let id = try JSONParser.parse(request.body)["id"]?.stringValue
                XCTAssertEqual(request.headers.first(name: "Hearth-Event-Id"), id)
            }
        }
    }

    static func control(_ server: HearthServer) throws -> any TriggerControl {
        try server.databases.triggerControl(for: DatabaseName(server.configuration.databases.defaultName))
    }

    /// Waits until `condition` holds for the trigger's status (or fails after `seconds`).
    static func waitForStatus(
        _ server: HearthServer, seconds: Double = 15, file: StaticString = #filePath, line: UInt = #line,
        _ condition: (TriggerStatus) -> Bool
    ) async throws -> TriggerStatus? {
        let deadline = Date().addingTimeInterval(seconds)
        var last: TriggerStatus?
        while Date() < deadline {
            last = try control(server).statuses().first
            if let last, condition(last) { return last }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTFail("the trigger's status never got there: \(String(describing: last?.json))", file: file, line: line)
        return nil
    }

    /// A receiver that fails for a while gets every event once it answers 2xx again, in log
    /// order (one in flight at a time), and the trigger's counts and cursor say so.
    func testAReceiverDownForAWhileGetsEverythingInOrder() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(status: 503, body: [])
        let settings = try Self.trigger(port: receiver.port, maxConcurrency: 1)
        try await withLiveServer(setting: \.triggers, to: [settings]) { server in
            let client = try TestClient(port: server.port)
            for index in 1...20 {
                _ = try client.request(#"{"op":"set","id":\#(index),"path":"/messages/m\#(index)","value":\#(index)}"#)
            }
            _ = try await Self.waitForRequests(receiver, count: 3)
            let retrying = try await Self.waitForStatus(server) { $0.state == .retrying }
            XCTAssertEqual(retrying?.deliveredRev, 0, "nothing is delivered while the receiver fails")
            XCTAssertGreaterThan(retrying?.failed ?? 0, 0)
            let failedAttempts = receiver.requests.count
            receiver.set(status: 204, body: [])
            let done = try await Self.waitForStatus(server) { $0.deliveredRev == 20 && $0.state == .idle }
            XCTAssertEqual(done?.delivered, 20)
            XCTAssertEqual(done?.lagRevisions, 0)
            let ids = try Self.bodies(receiver.requests).compactMap { $0["id"]?.stringValue }
            XCTAssertTrue(ids[..<failedAttempts].allSatisfy { $0 == "default:notify:1:/messages/m1" }, "\(ids)")
            var delivered: [String] = []
            for id in ids[failedAttempts...] where delivered.last != id { delivered.append(id) }
            XCTAssertEqual(delivered, (1...20).map { "default:notify:\($0):/messages/m\($0)" })
        }
    }

    /// An event that keeps failing past its maximum age goes to the dead-letter list, kept on
    /// disk; `replay` sends it again and a 2xx takes it off the list.
    func testAnEventFailingPastItsMaxAgeIsDeadLetteredAndReplayed() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(status: 500, body: [])
        let settings = try Self.trigger(port: receiver.port, maxAgeSeconds: 1, maxConcurrency: 1)
        try await withLiveServer(setting: \.triggers, to: [settings]) { server in
            let client = try TestClient(port: server.port)
            _ = try client.request(#"{"op":"set","id":1,"path":"/messages/lost","value":"x"}"#)
            _ = try client.request(#"{"op":"set","id":2,"path":"/messages/next","value":"y"}"#)
            let dead = try await Self.waitForStatus(server) { $0.deadLetters == 2 && $0.deliveredRev == 2 }
            XCTAssertEqual(dead?.state, .idle, "the cursor moved past the dead letters")
            let letters = try Self.control(server).deadLetters("notify", limit: 10)
            XCTAssertEqual(letters.map(\.id), ["default:notify:1:/messages/lost", "default:notify:2:/messages/next"])
            XCTAssertEqual(letters.first?.lastError, "HTTP 500")
            let file = server.configuration.dataDirectory + "/triggers/notify.dead.json"
            let kept = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
            guard case .array(let keptLetters) = kept else { return XCTFail("\(kept)") }
            XCTAssertEqual(keptLetters.count, 2, "the list is kept on disk")
            XCTAssertEqual(keptLetters.first?["body"]?["after"], "x")

            receiver.set(status: 200, body: [])
            let before = receiver.requests.count
            XCTAssertEqual(try Self.control(server).replay("notify", ids: ["default:notify:2:/messages/next"]), 1)
            let replayed = try await Self.waitForStatus(server) { $0.deadLetters == 1 }
            XCTAssertEqual(replayed?.delivered, 1)
            let sent = try Self.bodies(Array(receiver.requests[before...]))
            XCTAssertEqual(sent.map { $0["id"] }, ["default:notify:2:/messages/next"])
            XCTAssertEqual(
                try Self.control(server).deadLetters("notify", limit: 10).map(\.id), ["default:notify:1:/messages/lost"]
            )
            XCTAssertThrowsError(try Self.control(server).replay("nobody", ids: nil))
        }
    }

    /// Writes the rules deny never reach the log, so they trigger nothing; an authenticated
    /// writer is named with their claims, an admin as an admin.
    func testDeniedWritesTriggerNothingAndWritersAreNamed() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        let settings = try Self.trigger(port: receiver.port, maxConcurrency: 1)
        let rules = try temporaryFile(
            #"{"rules":{".read":true,"messages":{"$id":{".write":"auth != null && $id !== 'blocked'"}}}}"#)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rules
                $0.triggers = [settings]
            }
        ) { server in
            let user = try TestClient(port: server.port)
            let token = try await testToken(uid: "alice", claims: .object(["role": "writer"]), now: clock.now)
            XCTAssertEqual(try user.request(#"{"op":"auth","token":"\#(token)"}"#)["ok"], .bool(true))
            let anonymous = try TestClient(port: server.port)
            XCTAssertEqual(
                try anonymous.request(#"{"op":"set","id":1,"path":"/messages/a","value":1}"#)["error"]?["code"],
                "permission_denied")
            XCTAssertEqual(
                try user.request(#"{"op":"set","id":2,"path":"/messages/blocked","value":1}"#)["error"]?["code"],
                "permission_denied")
            XCTAssertEqual(try user.request(#"{"op":"set","id":3,"path":"/messages/ok","value":1}"#)["ok"], .bool(true))
            let admin = try TestClient(port: server.port)
            try admin.authAdmin()
            XCTAssertEqual(
                try admin.request(#"{"op":"set","id":4,"path":"/messages/blocked","value":2}"#)["ok"], .bool(true))
            let requests = try await Self.waitForRequests(receiver, count: 2)
            try await Task.sleep(nanoseconds: 300_000_000)
            XCTAssertEqual(receiver.requests.count, 2, "denied writes trigger nothing")
            let events = try Self.bodies(requests)
            XCTAssertEqual(events.map { $0["path"] }, ["/messages/ok", "/messages/blocked"])
            XCTAssertEqual(events[0]["auth"]?["uid"], "alice")
            XCTAssertEqual(events[0]["auth"]?["token"]?["role"], "writer")
            XCTAssertEqual(events[1]["auth"], .object(["admin": .bool(true)]))
            XCTAssertEqual(events[0]["timestamp"], .int(clock.now), "the server's time of the write")
        }
    }

    /// Bytes of the files directly in `directory`.
    static func bytes(in directory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? Int
            return total + (size ?? 0)
        }
    }

    /// While the receiver is down the log is kept for the trigger, up to the backlog bound; past
    /// it the kept log is dropped, the trigger is marked lost (status, metrics), the disk stays
    /// bounded, and deliveries go on from what the log still has.
    func testABacklogPastItsBoundIsDroppedAndTheTriggerMarkedLost() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(status: 500, body: [])
        let settings = try Self.trigger(port: receiver.port)
        let configure: (inout ServerConfiguration) -> Void = {
            $0.triggers = [settings]
            $0.triggerBacklogMaxBytes = 1 << 20
            $0.compactionMinBytes = 64 * 1024
            $0.compactionRatio = 0.1
            $0.metricsCacheMilliseconds = 0
        }
        try await withLiveServer(configure: configure) { server in
            let client = try TestClient(port: server.port)
            let filler = String(repeating: "x", count: 8 * 1024)
            let retained = server.configuration.dataDirectory + "/triggers/log"
            // Writes go on until the kept log passes its bound (compactions run between turns).
            var kept = 0
            var written = 0
            var lost: TriggerStatus?
            while written < 3000, lost == nil {
                written += 1
                _ = try client.request(
                    #"{"op":"set","id":\#(written),"path":"/messages/m\#(written)","value":"\#(filler)"}"#)
                kept = max(kept, Self.bytes(in: retained))
                if written.isMultiple(of: 50) { lost = try Self.control(server).statuses().first { $0.state == .lost } }
            }
            XCTAssertGreaterThan(kept, 0, "compactions kept the log the trigger still needs")
            XCTAssertNotNil(lost, "the trigger was marked lost after \(written) writes")
            XCTAssertGreaterThan(lost?.lostRevisions ?? 0, 0)
            XCTAssertLessThan(Self.bytes(in: retained), 2 << 20, "the kept log stays near its bound")
            try await Task.sleep(nanoseconds: 300_000_000)
            let metrics = try await XCTUnwrap(server.wellKnown.respond(to: WellKnownEndpoints.metricsPath)).get()
                .bodyText
            XCTAssertTrue(metrics.contains(#"hearth_trigger_lost{trigger="notify"} 1"#), metrics)
            // Back up: what the log still has is delivered, and replay clears the mark.
            receiver.set(status: 200, body: [])
            let caughtUp = try await Self.waitForStatus(server, seconds: 30) { $0.deliveredRev == UInt64(written) }
            XCTAssertEqual(caughtUp?.state, .lost, "the mark stays until someone looks")
            _ = try Self.control(server).replay("notify", ids: nil)
            XCTAssertEqual(try Self.control(server).statuses().first?.state, .idle)
        }
    }

    /// Two triggers, one delivering and one whose receiver is down while 5,000 writes go by: the
    /// first reads the newest writes from the database's shared tail; the second falls behind
    /// it, reads the log on its own once its receiver is back, and catches up: both get every
    /// event, with the values before and after.
    func testATriggerFarBehindCatchesUpBesideOneAtTheHead() async throws {
        let live = try await LoopbackReceiver.start()
        defer { live.stop() }
        let down = try await LoopbackReceiver.start()
        defer { down.stop() }
        down.set(status: 503, body: [])
        let fast = try Self.trigger("fast", path: "/rooms/{room}/messages/{id}", port: live.port, maxConcurrency: 16)
        let slow = try Self.trigger("slow", path: "/rooms/{room}/messages/{id}", port: down.port, maxConcurrency: 16)
        let count = 5000
        try await withLiveServer(setting: \.triggers, to: [fast, slow]) { server in
            let client = try TestClient(port: server.port)
            var lines = ""
            for index in 1...count {
                lines +=
                    #"{"op":"set","id":\#(index),"path":"/rooms/r\#(index % 3)/messages/m\#(index)","value":\#(index)}"#
                lines += "\n"
            }
            try client.send(String(lines.dropLast()))
            for _ in 1...count { _ = try client.readResponse() }
            _ = try await Self.waitForRequests(live, count: count, seconds: 60)
            XCTAssertEqual(try Self.control(server).statuses().first { $0.name == "slow" }?.deliveredRev, 0)
            down.set(status: 200, body: [])
            _ = try await Self.waitForStatus(server, seconds: 60) { _ in
                (try? Self.control(server).statuses().first { $0.name == "slow" }?.deliveredRev) == UInt64(count)
            }
            let expected = Set((1...count).map { "/rooms/r\($0 % 3)/messages/m\($0)" })
            for receiver in [live, down] {
                let events = try Self.bodies(receiver.requests)
                XCTAssertEqual(Set(events.compactMap { $0["path"]?.stringValue }), expected)
                XCTAssertTrue(events.allSatisfy { $0["kind"] == "create" && $0["before"] == .null })
                XCTAssertTrue(events.allSatisfy { $0["after"] == $0["rev"] }, "each message's value is its revision")
            }
        }
    }

    /// An https receiver is verified against the trigger's `caFile`: delivered to when its
    /// certificate chains to it, refused (and retried) by a trigger that trusts only the system.
    func testHTTPSReceiversAreVerifiedAgainstTheCAFile() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(pki.path("server.crt")).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: pki.path("server.key"), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        let receiver = try await LoopbackReceiver.start(tls: try NIOSSLContext(configuration: tls))
        defer { receiver.stop() }
        var trusting = try Self.trigger("trusting", port: receiver.port)
        trusting.url = "https://localhost:\(receiver.port)/hook"
        trusting.caFile = pki.path("ca.crt")
        var system = try Self.trigger("system", port: receiver.port)
        system.url = "https://localhost:\(receiver.port)/hook"
        try await withLiveServer(setting: \.triggers, to: [trusting, system]) { server in
            let client = try TestClient(port: server.port)
            _ = try client.request(#"{"op":"set","id":1,"path":"/messages/tls","value":1}"#)
            let requests = try await Self.waitForRequests(receiver, count: 1)
            XCTAssertEqual(try Self.bodies(requests).first?["trigger"], "trusting")
            let refused = try await Self.waitForStatus(server) { _ in
                (try? Self.control(server).statuses().first { $0.name == "system" }?.failed) ?? 0 > 0
            }
            XCTAssertNotNil(refused)
            XCTAssertEqual(receiver.requests.count, 1, "nothing reached the receiver without a verified chain")
        }
    }
}
