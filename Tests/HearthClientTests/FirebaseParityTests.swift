import Foundation
import HearthJSON
import XCTest

@testable import HearthClient

/// Behaviours ported from the Firebase guides that the client must share with Firebase.
final class FirebaseParityTests: XCTestCase {
    struct Post: Codable, Equatable {
        var title: String
        var tags: [String]
        var scores: [Int]
    }

    func testValuesReadAsFirebaseGivesThem() async throws {
        try await withServer { server in
            let db = server.client()
            let ref = db.reference(withPath: "dinosaurs/stego")
            try await ref.setValue(["height": 4, "length": 9.5])
            let snapshot = try await ref.getData()
            XCTAssertEqual(
                snapshot.childSnapshot(forPath: "height").value as? Double, 4, "whole numbers read as Double")
            XCTAssertEqual(snapshot.childSnapshot(forPath: "height").value as? Int, 4)
            XCTAssertEqual(snapshot.childSnapshot(forPath: "length").value as? Double, 9.5)
            XCTAssertNil(snapshot.childSnapshot(forPath: "length").value as? Int)

            // Array-like objects read as arrays (holes are NSNull); sparse ones stay objects.
            let lists = db.reference(withPath: "lists")
            try await lists.setValue([
                "dense": ["a", "b", "c"], "holes": ["0": "a", "2": "c"], "sparse": ["0": "a", "5": "f"],
            ])
            let read = try await lists.getData()
            XCTAssertEqual(read.childSnapshot(forPath: "dense").value as? [String], ["a", "b", "c"])
            let holes = read.childSnapshot(forPath: "holes").value as? [Any]
            XCTAssertEqual(holes?.count, 3)
            XCTAssertTrue(holes?[1] is NSNull)
            XCTAssertEqual(read.childSnapshot(forPath: "sparse").value as? [String: String], ["0": "a", "5": "f"])

            // A read value can be written back unchanged.
            try await db.reference(withPath: "copy").setValue(read.value)
            let copy = try await db.reference(withPath: "copy").getData()
            XCTAssertEqual(copy.json, read.json)
        }
    }

    func testCodableModelsWithArraysRoundTrip() async throws {
        try await withServer { server in
            let ref = server.client().reference(withPath: "posts/p1")
            let post = Post(title: "Hello", tags: ["swift", "db"], scores: [3, 1, 2])
            try await ref.setValue(from: post)
            let read = try await ref.getData()
            XCTAssertEqual(try read.data(as: Post.self), post)
        }
    }

    func testNSNullInAnUpdateDeletes() async throws {
        try await withServer { server in
            let ref = server.client().reference(withPath: "user")
            try await ref.setValue(["name": "Ada", "nick": "countess"])
            try await ref.updateChildValues(["nick": NSNull(), "born": 1815])
            let read = try await ref.getData()
            XCTAssertEqual(
                read.json, .object([JSONMember("born", .int(1815)), JSONMember("name", .string("Ada"))]))
        }
    }

    func testRemoveAllObserversOnAReferenceStopsItsQueriesToo() async throws {
        try await withServer { server in
            let db = server.client()
            let scores = db.reference(withPath: "scores")
            let seen = Recorder<String>()
            scores.observe(.value) { _ in seen.append("plain") }
            scores.queryOrderedByValue().queryLimited(toFirst: 1).observe(.value) { _ in seen.append("query") }
            db.reference(withPath: "scores/a").observe(.value) { _ in seen.append("child") }
            try await seen.wait(for: 3)
            scores.removeAllObservers()
            try await Task.sleep(nanoseconds: 100_000_000)
            let before = seen.all.count
            try await db.reference(withPath: "scores/a").setValue(1)
            try await eventually("the child observer") { seen.all.count > before }
            try await Task.sleep(nanoseconds: 100_000_000)
            XCTAssertEqual(Array(seen.all.dropFirst(before)), ["child"], "only the child's observer is left")
        }
    }

    func testEveryOnDisconnectCompletionRuns() async throws {
        try await withServer { server in
            let db = server.client()
            try await db.waitForConnection()
            let presence = db.reference(withPath: "presence/ada")
            let done = Recorder<String>()
            presence.child("lastSeen").onDisconnectSetValue(ServerValue.timestamp()) { error, _ in
                done.append("lastSeen \(error == nil)")
            }
            presence.child("state").onDisconnectSetValue("offline") { error, _ in done.append("state \(error == nil)") }
            presence.onDisconnectSetValue("gone", andPriority: 7) { error, _ in done.append("whole \(error == nil)") }
            let all = try await done.wait(for: 3)
            XCTAssertEqual(Set(all), ["lastSeen true", "state true", "whole true"])

            db.goOffline()
            let reader = server.client()
            try await eventually("the onDisconnect write") {
                (try await reader.reference(withPath: "presence/ada").getData().value as? String) == "gone"
            }
            let stored = try await reader.reference(withPath: "presence/ada").getData()
            XCTAssertEqual(stored.priority as? Int, 7)
        }
    }
}
