import Foundation
import HearthJSON
import XCTest

@testable import HearthServer

/// A data directory written by a daemon that held one database (`Fixtures/one-database-directory`:
/// hearthd 0.1.0 as it was before several databases, `fsync: always`, a snapshot at revision 59
/// and the log after it up to revision 64, rules accepted with `setRules`) opens as the default
/// database, in place: same data, same revision, same rules, no file moved or rewritten.
final class DatabaseDirectoryTests: XCTestCase {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/one-database-directory")

    func testADirectoryOfOneDatabaseOpensAsTheDefaultDatabaseUnchanged() async throws {
        let directory = temporaryDataDirectory()
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: directory)
        let before = try contents(of: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = nil
        configuration.dataDirectory = directory
        configuration.tokens.adminSecrets = ["fixture-admin-secret"]
        let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        do {
            let client = try TestClient(port: server.port)
            XCTAssertEqual(
                try client.request(#"{"op":"auth","id":0,"token":"fixture-admin-secret"}"#)["ok"], .bool(true))
            let state = try client.request(#"{"op":"get","id":1,"path":"/","format":"export","hash":true}"#)
            XCTAssertEqual(state["rev"], .int(64))
            XCTAssertEqual(state["hash"], "hQSBHWmRzJ5Vqneyf0/CGh20Cq8=")
            XCTAssertEqual(state["value"]?["meta"]?["title"], "fixture")
            XCTAssertEqual(state["value"]?["scores"]?["p01"]?[".priority"], .int(5))
            XCTAssertEqual(state["value"]?["counter"], .int(3))
            // The accepted rules are in force: the index they declare serves the query.
            let rules = try client.request(#"{"op":"getRules","id":2}"#)
            XCTAssertTrue(rules["rules"]?.jsonString.contains("points") ?? false, "\(rules)")
            let top = try client.request(
                #"{"op":"get","id":3,"path":"/scores","query":{"orderBy":"points","limitToLast":1}}"#)
            XCTAssertEqual(top["warning"], nil, "\(top)")
            XCTAssertEqual(top["value"]?["p57"]?["points"], .int(49), "\(top)")
            let unindexed = try client.request(
                #"{"op":"get","id":5,"path":"/scores","query":{"orderBy":"name","limitToLast":1}}"#)
            XCTAssertNotNil(unindexed["warning"], "\(unindexed)")
            // Listed as the default database, in the data directory itself.
            let info = try client.request(#"{"op":"databaseInfo","id":4,"db":"default"}"#)
            XCTAssertEqual(info["database"]?["directory"]?.stringValue, directory)
            XCTAssertEqual(info["database"]?["rev"], .int(64))
            client.close()
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
        // Nothing moved, nothing rewritten, nothing added but the lock file.
        let after = try contents(of: directory)
        XCTAssertEqual(Set(after.keys).subtracting(["LOCK"]), Set(before.keys))
        for (name, bytes) in before { XCTAssertEqual(after[name], bytes, name) }
    }

    private func contents(of directory: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
        }
        return files
    }
}
