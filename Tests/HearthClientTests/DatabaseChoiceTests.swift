import HearthJSON
import NIOCore
import XCTest

@testable import HearthClient

/// The `use` of the URL's database (`?ns=name`, docs/client.md "Choosing a database") against
/// scripted nodes speaking lines over real sockets (`FakeClusterNode`): it is the first request
/// of every connection, before `auth`, also after a reconnect and on another address; a refusal
/// fails the connection with the server's error.
final class DatabaseChoiceTests: XCTestCase {
    private func client(
        _ url: String, token: String? = nil, reconnectMaxDelay: TimeAmount = .milliseconds(200)
    ) -> Database {
        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(20)
        configuration.reconnectMaxDelay = reconnectMaxDelay
        if let token { configuration.tokenProvider = { token } }
        return Database(url: url, configuration: configuration)
    }

    private func refusal(_ code: String, _ message: String) -> JSONValue {
        .object([JSONMember("code", .string(code)), JSONMember("message", .string(message))])
    }

    func testUseGoesFirstOnEveryConnectionAndAfterEachReconnect() async throws {
        let first = try await FakeClusterNode.start(cluster: .null)
        let second = try await FakeClusterNode.start(cluster: .null)
        let db = client("hearth://\(first.address),\(second.address)/?ns=shop", token: "secret")
        defer {
            db.goOffline()
            Task {
                await first.stop()
                await second.stop()
            }
        }
        XCTAssertEqual(db.databaseName, "shop")
        try await db.waitForConnection()
        try await db.reference(withPath: "a").setValue(1)
        XCTAssertEqual(first.opsByConnection.first?.prefix(3), ["use", "auth", "set"])
        let use = try XCTUnwrap(first.state.withLockedValue { $0.requests.first?.first })
        XCTAssertEqual(use["db"], .string("shop"))

        // Failover to the other address: its connection starts with `use` too.
        await first.stop()
        try await eventually("a connection to the second node") { second.opsByConnection.count == 1 }
        try await db.reference(withPath: "b").setValue(2)
        XCTAssertEqual(second.opsByConnection.first?.first, "use")
        XCTAssertEqual(second.opsByConnection.first?.dropFirst().first, "auth")
        XCTAssertTrue(second.opsByConnection.first?.contains("set") ?? false)

        // A reconnect to the same node (the first is gone): `use` again, then `auth`.
        await second.dropConnections()
        try await eventually("a second connection to the second node") { second.opsByConnection.count == 2 }
        try await db.reference(withPath: "c").setValue(3)
        XCTAssertEqual(second.opsByConnection.last?.prefix(2), ["use", "auth"])
        for ops in first.opsByConnection + second.opsByConnection {
            XCTAssertEqual(ops.filter { $0 == "use" }.count, 1, "one use per connection, first: \(ops)")
        }
    }

    func testWithoutNsNothingChangesOnTheWire() async throws {
        let node = try await FakeClusterNode.start(cluster: .null)
        let db = client("hearth://\(node.address)/", token: "secret")
        defer {
            db.goOffline()
            Task { await node.stop() }
        }
        XCTAssertNil(db.databaseName)
        try await db.waitForConnection()
        try await db.reference(withPath: "a").setValue(1)
        await node.dropConnections()
        try await eventually("a reconnect") { node.opsByConnection.count == 2 }
        try await db.reference(withPath: "b").setValue(2)
        XCTAssertEqual(node.opsByConnection.map { $0.first }, ["auth", "auth"])
        XCTAssertFalse(node.opsByConnection.joined().contains("use"))
    }

    func testARefusedDatabaseFailsTheConnectionWithTheServersErrorAndIsNotRetriedAtOnce() async throws {
        let first = try await FakeClusterNode.start(cluster: .null)
        let second = try await FakeClusterNode.start(cluster: .null)
        let message = #"no database named "shop" (autoCreateDatabases is off; create it with hearth db create shop)"#
        first.state.withLockedValue { $0.useRefusal = refusal("not_found", message) }
        second.state.withLockedValue { $0.useRefusal = refusal("not_found", message) }
        let db = client(
            "hearth://\(first.address),\(second.address)/?ns=shop", token: "secret", reconnectMaxDelay: .seconds(30))
        defer {
            db.goOffline()
            Task {
                await first.stop()
                await second.stop()
            }
        }
        // A write made meanwhile waits: nothing but `use` reaches the server.
        db.reference(withPath: "a").setValue(1, withCompletionBlock: nil)
        do {
            try await db.waitForConnection()
            XCTFail("the connection was accepted")
        } catch let error as HearthError {
            XCTAssertEqual(error, HearthError(.notFound, message))
        }
        await assertEqual(await db.connectionError(), HearthError(.notFound, message))
        try await Task.sleep(for: .milliseconds(400))
        XCTAssertEqual(first.opsByConnection, [["use"]], "no other request, no immediate retry")
        XCTAssertEqual(second.opsByConnection, [], "the other address is not tried at once")
        let state = try await db.repo.connectionStateForTesting.get()
        XCTAssertFalse(state.connected)
        XCTAssertEqual(state.queued, 1)
    }

    func testAnOverloadedRefusalIsAnOrdinaryFailedAttempt() async throws {
        let first = try await FakeClusterNode.start(cluster: .null)
        let second = try await FakeClusterNode.start(cluster: .null)
        first.state.withLockedValue {
            $0.useRefusal = refusal("overloaded", #"database "shop" has its maxConnections (10)"#)
        }
        let db = client("hearth://\(first.address),\(second.address)/?ns=shop")
        defer {
            db.goOffline()
            Task {
                await first.stop()
                await second.stop()
            }
        }
        try await db.waitForConnection()
        XCTAssertEqual(db.connectedAddress, second.address)
        XCTAssertEqual(first.opsByConnection.first, ["use"])
        XCTAssertEqual(second.opsByConnection.first?.first, "use")
    }

    func testAServerWithoutDatabasesIsNamedAsSuch() async throws {
        let node = try await FakeClusterNode.start(cluster: .null)
        node.state.withLockedValue { $0.useRefusal = refusal("unknown_op", "unknown op \"use\"") }
        let db = client("hearth://\(node.address)/?ns=shop", reconnectMaxDelay: .seconds(30))
        defer {
            db.goOffline()
            Task { await node.stop() }
        }
        do {
            try await db.waitForConnection()
            XCTFail("the connection was accepted")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .unknownOp)
            XCTAssertEqual(
                error.message,
                "hearth://\(node.address) does not serve several databases, so it cannot use \"shop\" "
                    + "(it answered use with unknown_op: unknown op \"use\")")
        }
    }
}
