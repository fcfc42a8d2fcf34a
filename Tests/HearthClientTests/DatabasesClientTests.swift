import Foundation
import XCTest

@testable import HearthClient

/// Several databases of one real server through HearthClient (docs/client.md "Choosing a
/// database"): a URL's `?ns=` keeps a client in its database, across a restart of the server, and
/// the admin calls list, create, inspect and delete them.
final class DatabasesClientTests: XCTestCase {
    private func client(_ server: TestServer, database: String?) -> Database {
        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(20)
        configuration.reconnectMaxDelay = .milliseconds(200)
        return Database(url: server.url + (database.map { "/?ns=\($0)" } ?? ""), configuration: configuration)
    }

    func testTwoDatabasesSideBySideAndTheirLifecycle() async throws {
        let server = try await TestServer.start()
        var running = true
        do {
            try await sideBySide(server, running: &running)
        } catch {
            if running { await server.stop() }
            try? FileManager.default.removeItem(atPath: server.configuration.dataDirectory)
            throw error
        }
        if running { await server.stop() }
        try? FileManager.default.removeItem(atPath: server.configuration.dataDirectory)
    }

    private func sideBySide(_ server: TestServer, running: inout Bool) async throws {
        let main = client(server, database: nil)
        defer { main.goOffline() }
        try await main.reference(withPath: "greeting").setValue("hello from the default database")
        let created = try await main.createDatabase("shop")
        XCTAssertEqual(created.name, "shop")
        XCTAssertFalse(created.isDefault)
        XCTAssertTrue(
            created.directory.hasSuffix("/databases/shop") || created.directory.hasSuffix("/databases/shop/"),
            created.directory)
        do {
            _ = try await main.createDatabase("shop")
            XCTFail("created twice")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .badRequest)
            XCTAssertTrue(error.message.contains("already exists"), error.message)
        }

        let shop = client(server, database: "shop")
        defer { shop.goOffline() }
        XCTAssertEqual(shop.databaseName, "shop")
        let seen = Recorder<String>()
        shop.reference(withPath: "items").observe(.childAdded) { snapshot in seen.append(snapshot.key) }
        try await shop.reference(withPath: "items/a").setValue(["n": 1])
        try await seen.wait(for: 1)
        let a = try await shop.reference(withPath: "items/a/n").getData()
        XCTAssertEqual(a.value as? Int, 1)
        let greetingInShop = try await shop.reference(withPath: "greeting").getData()
        XCTAssertFalse(greetingInShop.exists(), "nothing crosses")
        let itemsInMain = try await main.reference(withPath: "items").getData()
        XCTAssertFalse(itemsInMain.exists(), "nothing crosses")
        let greeting = try await main.reference(withPath: "greeting").getData()
        XCTAssertEqual(greeting.value as? String, "hello from the default database")

        // A restart: the client reconnects to its database, and a write made meanwhile lands there.
        await server.stop()
        running = false
        let written = Recorder<String>()
        shop.reference(withPath: "items/b").setValue(["n": 2]) { error, _ in
            written.append("\(error.map { "\($0)" } ?? "ok")")
        }
        try await server.restart()
        running = true
        try await seen.wait(for: 2)
        let outcome = try await written.wait(for: 1)
        XCTAssertEqual(outcome, ["ok"])
        let b = try await shop.reference(withPath: "items/b/n").getData()
        XCTAssertEqual(b.value as? Int, 2)
        let fresh = client(server, database: "shop")
        defer { fresh.goOffline() }
        let items = try await fresh.reference(withPath: "items").getData()
        XCTAssertEqual(items.childrenCount, 2)
        let itemsInMainAfter = try await main.reference(withPath: "items").getData()
        XCTAssertFalse(itemsInMainAfter.exists())

        let list = try await main.listDatabases()
        XCTAssertEqual(list.map(\.name), ["default", "shop"])
        XCTAssertEqual(list.map(\.isDefault), [true, false])
        let info = try await shop.databaseInfo("shop")
        XCTAssertEqual(info.name, "shop")
        XCTAssertGreaterThanOrEqual(info.connections, 1)
        do {
            _ = try await main.databaseInfo("nosuch")
            XCTFail("an unknown database has info")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .notFound)
        }
        do {
            _ = try await main.databaseInfo("No_Such")
            XCTFail("a bad name was sent")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .badRequest)
            XCTAssertTrue(error.message.hasPrefix(#"invalid database name "No_Such""#), error.message)
        }

        shop.goOffline()
        fresh.goOffline()
        try await eventually("the clients of shop gone") { try await main.databaseInfo("shop").connections == 0 }
        let deletion = try await main.deleteDatabase("shop")
        XCTAssertEqual(deletion.name, "shop")
        XCTAssertFalse(deletion.purged)
        let movedTo = try XCTUnwrap(deletion.movedTo)
        XCTAssertTrue(movedTo.contains("/trash/shop-"), movedTo)
        XCTAssertTrue(FileManager.default.fileExists(atPath: movedTo))
        let remaining = try await main.listDatabases()
        XCTAssertEqual(remaining.map(\.name), ["default"])
        do {
            _ = try await main.deleteDatabase("default")
            XCTFail("the default database was deleted")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .badRequest)
        }

        // The name can be created again, empty; --purge removes the files for good.
        _ = try await main.createDatabase("shop")
        let again = client(server, database: "shop")
        defer { again.goOffline() }
        let recreated = try await again.reference(withPath: "items").getData()
        XCTAssertFalse(recreated.exists())
        again.goOffline()
        try await eventually("the client of shop gone") { try await main.databaseInfo("shop").connections == 0 }
        let purged = try await main.deleteDatabase("shop", purge: true)
        XCTAssertEqual(purged, DatabaseDeletion(name: "shop", movedTo: nil, purged: true))
    }

    func testAnUnknownDatabaseFailsTheConnectionWithTheServersError() async throws {
        try await withServer(
            configure: { $0.databases.autoCreate = false },
            { server in
                let db = client(server, database: "nosuch")
                defer { db.goOffline() }
                db.reference(withPath: "a").setValue(1, withCompletionBlock: nil)
                do {
                    try await db.waitForConnection()
                    XCTFail("connected to a database that does not exist")
                } catch let error as HearthError {
                    XCTAssertEqual(error.code, .notFound)
                    XCTAssertTrue(error.message.hasPrefix(#"no database named "nosuch""#), error.message)
                }
                let main = client(server, database: nil)
                defer { main.goOffline() }
                let names = try await main.listDatabases().map(\.name)
                XCTAssertEqual(names, ["default"], "nothing created")
                // Once an admin creates it, the client gets in (after reconnectMaxDelay) and the write
                // that waited lands there.
                _ = try await main.createDatabase("nosuch")
                try await eventually("the client in its database") {
                    try await main.databaseInfo("nosuch").rev ?? 0 >= 1
                }
            })
    }

    func testAClientWhoseDatabaseIsDeletedHearsWhy() async throws {
        try await withServer(
            configure: { $0.databases.autoCreate = false },
            { server in
                let main = client(server, database: nil)
                defer { main.goOffline() }
                _ = try await main.createDatabase("shop")
                let shop = client(server, database: "shop")
                defer { shop.goOffline() }
                try await shop.reference(withPath: "a").setValue(1)
                let deletion = try await main.deleteDatabase("shop")
                XCTAssertNotNil(deletion.movedTo)
                // The server closes the connection; the reconnect's `use` is refused.
                try await eventually("the refusal") { await shop.connectionError()?.code == .notFound }
                let error = await shop.connectionError()
                XCTAssertTrue(error?.message.contains("shop") ?? false, "\(String(describing: error))")
            })
    }
}
