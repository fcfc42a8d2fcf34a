import Foundation
import HearthServer
import XCTest

@testable import HearthClient

/// A client given several addresses (docs/client.md "Clusters and failover"), against two real
/// standalone servers: it skips an address where nothing listens, and when its server goes it
/// moves to the other one, resubscribing and sending what waited.
final class MultiAddressTests: XCTestCase {
    /// A loopback port nothing listens on: a server's, after it stopped.
    private func deadPort() async throws -> Int {
        let server = try await TestServer.start()
        let port = server.configuration.port
        await server.remove()
        return port
    }

    private func client(_ url: String, reconnectMinDelayMs: Int64 = 20) -> Database {
        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(reconnectMinDelayMs)
        configuration.reconnectMaxDelay = .milliseconds(1000)
        return Database(url: url, configuration: configuration)
    }

    func testTheClientSkipsADeadAddressAndMovesToTheOtherServerWhenItsServerStops() async throws {
        let dead = try await deadPort()
        let first = try await TestServer.start()
        let second = try await TestServer.start()
        var firstRunning = true
        do {
            try await switchServers(dead: dead, first: first, second: second, firstRunning: &firstRunning)
        } catch {
            if firstRunning { await first.stop() }
            await second.stop()
            throw error
        }
        await second.stop()
        for server in [first, second] {
            try? FileManager.default.removeItem(atPath: server.configuration.dataDirectory)
        }
    }

    private func switchServers(
        dead: Int, first: TestServer, second: TestServer, firstRunning: inout Bool
    ) async throws {
        // The first server is further on (rev 3) than the second (rev 1): resuming from the first
        // server's revision, the second sends its whole result (two unrelated standalone servers;
        // in a cluster every node has the same revisions).
        let seedFirst = first.client()
        try await seedFirst.reference(withPath: "x").setValue("from the first")
        try await seedFirst.reference(withPath: "a").setValue(1)
        try await seedFirst.reference(withPath: "b").setValue(2)
        seedFirst.goOffline()
        let seedSecond = second.client()
        try await seedSecond.reference(withPath: "x").setValue("from the second")
        seedSecond.goOffline()

        // Reconnects wait 0.5–1 s, long enough to make a write while disconnected.
        let db = client(
            "hearth://127.0.0.1:\(dead),127.0.0.1:\(first.configuration.port),127.0.0.1:\(second.configuration.port)",
            reconnectMinDelayMs: 1000)
        defer { db.goOffline() }
        try await db.waitForConnection()
        XCTAssertEqual(db.connectedAddress, "127.0.0.1:\(first.configuration.port)")
        XCTAssertNil(db.cluster, "a standalone server announces no cluster")

        let values = Recorder<String>()
        db.reference(withPath: "x").observe(.value) { values.append($0.value as? String ?? "nil") }
        let connected = Recorder<Bool>()
        db.reference(withPath: ".info/connected").observe(.value) { connected.append($0.value as? Bool ?? false) }
        try await eventually("the first server's value") { values.all.last == "from the first" }
        try await eventually("connected") { connected.all.last == true }

        await first.stop()
        firstRunning = false
        try await eventually("the lost connection") { connected.all.last == false }
        XCTAssertNil(db.connectedAddress)
        let written = Recorder<String>()
        db.reference(withPath: "count").setValue(ServerValue.increment(1)) { error, _ in
            written.append(error.map { "\($0)" } ?? "ok")
        }

        try await eventually("the connection to the second server", timeout: 10) { connected.all.last == true }
        XCTAssertEqual(db.connectedAddress, "127.0.0.1:\(second.configuration.port)")
        let outcome = try await written.wait(for: 1, timeout: 10)
        XCTAssertEqual(outcome, ["ok"])
        try await eventually("the second server's value") { values.all.last == "from the second" }
        XCTAssertEqual(values.all, ["from the first", "from the second"])

        let reader = second.client()
        defer { reader.goOffline() }
        let count = try await reader.reference(withPath: "count").getData()
        XCTAssertEqual(count.value as? Int, 1, "the write queued while disconnected is applied once")
    }

    func testEveryAddressRefusingFailsTheWaitWithEachReason() async throws {
        let one = try await deadPort()
        let two = try await deadPort()
        let db = client("hearth://127.0.0.1:\(one),127.0.0.1:\(two)")
        defer { db.goOffline() }
        do {
            try await db.waitForConnection()
            XCTFail("connected to nothing")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .connectionRefused)
            XCTAssertEqual(
                error.message,
                "cannot connect to hearth://127.0.0.1:\(one): connection refused; "
                    + "cannot connect to hearth://127.0.0.1:\(two): connection refused")
        }
    }
}
