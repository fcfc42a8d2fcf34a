import HearthJSON
import XCTest

@testable import HearthClient

/// `getShallowData()`, `Database.ping()` and the overlap check of large updates.
final class ShallowAndPingTests: XCTestCase {
    func testShallowReadListsKeys() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let ref = db.reference(withPath: "dinosaurs")
            try await ref.setValue(["stego": ["height": 4], "rex": ["length": 12], "count": 2])
            let shallow = try await ref.getShallowData()
            XCTAssertEqual(shallow.json, .object(["count": .bool(true), "rex": .bool(true), "stego": .bool(true)]))
            XCTAssertEqual(shallow.childrenCount, 3)
            try await assertEqual(try await ref.child("count").getShallowData().json, .int(2))
            let none = try await ref.child("none").getShallowData()
            XCTAssertFalse(none.exists())
            let info = try await db.reference(withPath: ".info").getShallowData()
            XCTAssertEqual(info.json, .object(["connected": .bool(true), "serverTimeOffset": .bool(true)]))
        }
    }

    func testPingReturnsServerTime() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let serverTime = try await db.ping()
            XCTAssertLessThan(abs(serverTime - before), 60_000)
        }
    }

    func testLargeUpdateFindsOverlapsQuickly() async throws {
        let db = Database(url: "hearth://127.0.0.1:1")
        defer { db.goOffline() }
        var values: [String: Any] = [:]
        for i in 0..<20_000 { values["k\(i)/v"] = i }
        values["k7"] = 1
        let error = await completion {
            db.reference(withPath: "big").updateChildValues(values, withCompletionBlock: $0)
        }
        XCTAssertEqual(error?.hearthCode, .invalidPath)
        XCTAssertEqual((error as? HearthError)?.message.contains("/k7 and /k7/v overlap"), true)
    }
}
