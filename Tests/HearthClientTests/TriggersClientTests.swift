import Foundation
import HearthJSON
import XCTest

@testable import HearthClient

/// A database's triggers through HearthClient (docs/client.md "Triggers"): added with an inline
/// secret, listed with their status, their dead letters read and replayed, removed.
final class TriggersClientTests: XCTestCase {
    private let secret = String(repeating: "c1ient-", count: 6)

    func testAddListReplayAndRemove() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let none = try await db.listTriggers()
            XCTAssertEqual(none, [])
            let added = try await db.addTrigger(
                .object([
                    JSONMember("name", .string("notify")), JSONMember("path", .string("/messages/{id}")),
                    JSONMember("on", .array([.string("delete"), .string("create")])),
                    JSONMember("url", .string("http://127.0.0.1:9/hook")), JSONMember("secret", .string(secret)),
                ]))
            XCTAssertEqual(added.name, "notify")
            XCTAssertEqual(added.path, "/messages/{id}")
            XCTAssertEqual(Set(added.kinds), ["create", "delete"])
            XCTAssertEqual(added.url, "http://127.0.0.1:9/hook")
            XCTAssertEqual(added.source, "api")
            XCTAssertEqual(added.deadLetters, 0)
            XCTAssertNil(added.lastError)
            XCTAssertFalse(added.json.jsonString.contains(secret))

            let listed = try await db.listTriggers()
            XCTAssertEqual(listed.map(\.name), ["notify"])
            let letters = try await db.deadLetters("notify", limit: 10)
            XCTAssertEqual(letters, [])
            let replayed = try await db.replayTrigger("notify")
            XCTAssertEqual(replayed, 0)
            let replayedOne = try await db.replayTrigger("notify", ids: ["nope"])
            XCTAssertEqual(replayedOne, 0)

            do {
                _ = try await db.addTrigger(.object([JSONMember("name", .string("bad"))]))
                XCTFail("a trigger without a path was added")
            } catch let error as HearthError {
                XCTAssertEqual(error.code, .badRequest)
                XCTAssertTrue(error.message.contains("trigger.path"), error.message)
            }
            try await db.removeTrigger("notify")
            let left = try await db.listTriggers()
            XCTAssertEqual(left, [])
            do {
                try await db.removeTrigger("notify")
                XCTFail("an unknown trigger was removed")
            } catch let error as HearthError {
                XCTAssertEqual(error.code, .notFound)
            }
        }
    }
}
