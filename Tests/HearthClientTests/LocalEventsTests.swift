import Foundation
import HearthJSON
import XCTest

@testable import HearthClient

/// Local events first (docs/client.md "Local events and the cache"): a write shows in this
/// client's observers before the server answers, and is rolled back when the server refuses it.
final class LocalEventsTests: XCTestCase {
    func testAWriteShowsAtOnceAndTheServerConfirmsItSilently() async throws {
        try await withServer { server in
            let db = server.client()
            let values = Recorder<JSONValue>()
            db.reference(withPath: "items").observe(.value) { values.append($0.json) }
            try await values.wait(for: 1)
            db.goOffline()
            let done = Recorder<String>()
            db.reference(withPath: "items/a").setValue(1) { error, _ in done.append(error.map { "\($0)" } ?? "ok") }
            let seen = try await values.wait(for: 2)
            XCTAssertEqual(seen, [.null, .object([JSONMember("a", .int(1))])])
            XCTAssertTrue(done.all.isEmpty, "the completion waits for the server's answer")

            db.goOnline()
            try await done.wait(for: 1)
            XCTAssertEqual(done.all, ["ok"])
            let other = server.client()
            let stored = try await other.reference(withPath: "items/a").getData()
            XCTAssertEqual(stored.value as? Int, 1)
            try await Task.sleep(nanoseconds: 200_000_000)
            XCTAssertEqual(values.all.count, 2, "the server's confirmation raises nothing: \(values.all)")
        }
    }

    func testADeniedWriteIsRolledBackWithTheEventsThatUndoIt() async throws {
        let rules = #"{"rules":{".read":true,"open":{".write":true},"locked":{".write":false}}}"#
        try await withSecureServer(rules: rules) { server in
            let db = server.client()
            let ref = db.reference(withPath: "locked")
            let log = Recorder<String>()
            ref.observe(.childAdded) { log.append("added \($0.key)") }
            ref.observe(.childRemoved) { log.append("removed \($0.key)") }
            ref.observe(.value) { log.append("value \($0.json.jsonString)") }
            try await log.wait(for: 1)
            let error = await completion { ref.child("x").setValue(1, withCompletionBlock: $0) }
            XCTAssertEqual(error?.hearthCode, .permissionDenied)
            XCTAssertEqual(
                log.all, ["value null", "added x", #"value {"x":1}"#, "removed x", "value null"],
                "the local event, then its rollback, all before the completion")
        }
    }

    func testAWriteTheServerFindsInvalidIsRolledBack() async throws {
        let rules = #"{"rules":{".read":true,".write":true}}"#
        let server = try await SecureTestServer.start(rules: rules) { $0.limits.maxStringBytes = 16 }
        defer { Task { await server.remove() } }
        let db = server.client()
        let ref = db.reference(withPath: "notes")
        let values = Recorder<JSONValue>()
        ref.observe(.value) { values.append($0.json) }
        try await values.wait(for: 1)
        let long = String(repeating: "x", count: 40)
        let error = await completion { ref.child("n").setValue(long, withCompletionBlock: $0) }
        XCTAssertNotNil(error)
        XCTAssertEqual(values.all, [.null, .object([JSONMember("n", .string(long))]), .null])
    }

    func testPurgeOutstandingWritesRollsBackAndCancels() async throws {
        try await withServer { server in
            let db = server.client()
            let ref = db.reference(withPath: "drafts")
            let values = Recorder<JSONValue>()
            ref.observe(.value) { values.append($0.json) }
            try await values.wait(for: 1)
            db.goOffline()
            let done = Recorder<HearthError.Code?>()
            ref.child("d").setValue("draft") { error, _ in done.append(error?.hearthCode) }
            try await values.wait(for: 2)
            db.purgeOutstandingWrites()
            try await done.wait(for: 1)
            XCTAssertEqual(done.all, [.writeCanceled])
            XCTAssertEqual(values.all.last, .null)
            db.goOnline()
            try await db.waitForConnection()
            let stored = try await server.client().reference(withPath: "drafts").getData()
            XCTAssertFalse(stored.exists(), "a purged write never reaches the server")
        }
    }

    func testATransactionShowsItsTentativeValueOnlyWithLocalEvents() async throws {
        try await withServer { server in
            let db = server.client()
            let ref = db.reference(withPath: "likes")
            try await ref.setValue(1)
            let values = Recorder<JSONValue>()
            ref.observe(.value) { values.append($0.json) }
            try await values.wait(for: 1)
            let quiet = Recorder<JSONValue>()
            db.reference(withPath: "quiet").observe(.value) { quiet.append($0.json) }
            try await quiet.wait(for: 1)
            db.goOffline()
            let done = Recorder<Bool>()
            ref.runTransactionBlock(
                { data in
                    data.value = ((data.value as? Int) ?? 0) + 1
                    return .success(withValue: data)
                }, andCompletionBlock: { _, committed, _ in done.append(committed) })
            let seen = try await values.wait(for: 2)
            XCTAssertEqual(seen.last, .int(2), "the tentative value shows while offline")

            db.reference(withPath: "quiet").runTransactionBlock(
                { data in
                    data.value = "set"
                    return .success(withValue: data)
                }, andCompletionBlock: { _, committed, _ in done.append(committed) }, withLocalEvents: false)
            try await Task.sleep(nanoseconds: 150_000_000)
            XCTAssertEqual(quiet.all, [.null], "no local event without local events")

            db.goOnline()
            try await done.wait(for: 2)
            XCTAssertEqual(done.all, [true, true])
            try await quiet.wait(for: 2)
            XCTAssertEqual(quiet.all.last, .string("set"))
            let stored = try await server.client().reference(withPath: "likes").getData()
            XCTAssertEqual(stored.value as? Int, 2)
        }
    }

    func testServerValuesAreEstimatedLocallyThenCorrected() async throws {
        try await withServer { server in
            let db = server.client()
            try await db.waitForConnection()
            let ref = db.reference(withPath: "counter")
            try await ref.setValue(5)
            let values = Recorder<Int>()
            ref.observe(.value) { if let n = $0.value as? Int { values.append(n) } }
            try await values.wait(for: 1)
            db.goOffline()
            ref.setValue(ServerValue.increment(2), withCompletionBlock: nil)
            let seen = try await values.wait(for: 2)
            XCTAssertEqual(seen, [5, 7], "the increment is estimated on the data the client shows")
            db.goOnline()
            try await eventually("the server's value") {
                (try await server.client().reference(withPath: "counter").getData().value as? Int) == 7
            }
        }
    }
}
