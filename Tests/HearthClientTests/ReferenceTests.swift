import HearthJSON
import XCTest

@testable import HearthClient

final class ReferenceTests: XCTestCase {
    func testNavigation() throws {
        let db = Database(url: "hearth://127.0.0.1:1")
        defer { db.goOffline() }
        let ref = db.reference(withPath: "users/ada")
        XCTAssertEqual(ref.key, "ada")
        XCTAssertEqual(ref.child("posts//1/").url, "hearth://127.0.0.1:1/users/ada/posts/1")
        XCTAssertEqual(ref.parent?.key, "users")
        XCTAssertNil(ref.root.key)
        XCTAssertNil(ref.root.parent)
        XCTAssertEqual(db.reference().url, "hearth://127.0.0.1:1")
        XCTAssertEqual(try Database(validatingURL: "hearth://localhost").url, "hearth://localhost:9000")
        XCTAssertThrowsError(try Database(validatingURL: "http://x:1")) { XCTAssertEqual($0.hearthCode, .invalidURL) }
        XCTAssertThrowsError(try Database(validatingURL: "hearth://x:99999")) {
            XCTAssertEqual($0.hearthCode, .invalidURL)
        }
        let a = ref.childByAutoId().key ?? ""
        let b = ref.childByAutoId().key ?? ""
        XCTAssertEqual(a.utf8.count, 20)
        XCTAssertLessThan(a, b)
    }

    func testWritesAndReads() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let ref = db.reference(withPath: "dinosaurs")
            try await ref.child("stego").setValue(["height": 4, "length": 9.5, "name": "Stegosaurus", "armored": true])
            var snapshot = try await ref.child("stego").getData()
            let value = try XCTUnwrap(snapshot.value as? [String: Any])
            XCTAssertEqual(value["height"] as? Int, 4)
            XCTAssertEqual(value["length"] as? Double, 9.5)
            XCTAssertEqual(value["name"] as? String, "Stegosaurus")
            XCTAssertEqual(value["armored"] as? Bool, true)

            try await ref.updateChildValues(["stego/height": 5, "rex/length": 12, "ptero": ["height": 0.6]])
            snapshot = try await ref.getData()
            XCTAssertEqual(snapshot.childSnapshot(forPath: "stego/height").value as? Int, 5)
            XCTAssertEqual(snapshot.childSnapshot(forPath: "rex/length").value as? Int, 12)
            XCTAssertTrue(snapshot.hasChild("ptero/height"))
            XCTAssertFalse(snapshot.hasChild("ptero/weight"))
            XCTAssertEqual(snapshot.childrenCount, 3)

            try await ref.child("rex").setValue(["length": 12], andPriority: 1)
            try await ref.child("stego").setPriority("b")
            snapshot = try await ref.getData()
            XCTAssertEqual(snapshot.childSnapshot(forPath: "rex").priority as? Int, 1)
            XCTAssertEqual(snapshot.childSnapshot(forPath: "stego").priority as? String, "b")
            // Default order is priority order: none, then numbers, then strings.
            XCTAssertEqual(snapshot.children.map(\.key), ["ptero", "rex", "stego"])
            XCTAssertEqual(snapshot.children.first?.ref.url, "\(server.url)/dinosaurs/ptero")

            try await ref.child("ptero").removeValue()
            snapshot = try await ref.child("ptero").getData()
            XCTAssertFalse(snapshot.exists())
            XCTAssertNil(snapshot.value)

            // Arrays are stored as objects keyed "0", "1", … and read back as arrays.
            try await ref.child("list").setValue(["a", "b"])
            snapshot = try await ref.child("list").getData()
            XCTAssertEqual(snapshot.value as? [String], ["a", "b"])
            XCTAssertEqual(snapshot.json, .object([JSONMember("0", .string("a")), JSONMember("1", .string("b"))]))
            XCTAssertTrue(snapshot.hasChildren())

            // Push ids sort in creation order, and writes with completion blocks work.
            let log = db.reference(withPath: "log")
            for i in 0..<3 {
                let error = await completion { log.childByAutoId().setValue(i, withCompletionBlock: $0) }
                XCTAssertNil(error)
            }
            snapshot = try await log.getData()
            XCTAssertEqual(snapshot.children.map { $0.value as? Int }, [0, 1, 2])

            // Server values.
            try await db.reference(withPath: "visits").setValue(ServerValue.increment(2))
            try await db.reference(withPath: "visits").setValue(ServerValue.increment(3))
            snapshot = try await db.reference(withPath: "visits").getData()
            XCTAssertEqual(snapshot.value as? Int, 5)
        }
    }

    func testCallsThatCanNeverSucceedFailAtOnce() async throws {
        // No server at all: the errors must come from the client, immediately.
        let db = Database(url: "hearth://127.0.0.1:1")
        defer { db.goOffline() }
        let bad = db.reference(withPath: "a").child("b.c")
        XCTAssertEqual(bad.key, "b.c")
        var error = await completion { bad.setValue(1, withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidPath)
        error = await completion { db.reference(withPath: ".info/connected").setValue(true, withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidPath)
        error = await completion { db.reference(withPath: "a").setValue(["x.y": 1], withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidKey)
        error = await completion { db.reference(withPath: "a").setValue(Double.nan, withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidValue)
        error = await completion { db.reference(withPath: "a").setValue(Date(), withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidValue)
        error = await completion { db.reference(withPath: "a").setPriority(true, withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidValue)
        error = await completion {
            db.reference(withPath: "a").updateChildValues(["b": 1, "b/c": 2], withCompletionBlock: $0)
        }
        XCTAssertEqual(error?.hearthCode, .invalidPath)
        error = await completion { bad.onDisconnectRemoveValue(withCompletionBlock: $0) }
        XCTAssertEqual(error?.hearthCode, .invalidPath)
        do {
            _ = try await bad.getData()
            XCTFail("getData of an invalid path succeeded")
        } catch {
            XCTAssertEqual(error.hearthCode, .invalidPath)
        }
        do {
            _ = try await bad.runTransaction { .success(withValue: $0) }
            XCTFail("a transaction at an invalid path succeeded")
        } catch {
            XCTAssertEqual(error.hearthCode, .invalidPath)
        }
    }

    func testCodable() async throws {
        struct Dinosaur: Codable, Equatable {
            var name: String
            var height: Double
            var tags: [String: Bool]?
        }
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let ref = db.reference(withPath: "dinosaurs/stego")
            let stego = Dinosaur(name: "Stegosaurus", height: 4, tags: ["armored": true])
            try await ref.setValue(from: stego)
            let snapshot = try await ref.getData()
            XCTAssertEqual(snapshot.value as? [String: Any] == nil, false)
            XCTAssertEqual(try snapshot.data(as: Dinosaur.self), stego)
            XCTAssertEqual(snapshot.json["height"], .int(4))
            let missing = try await db.reference(withPath: "nothing").getData()
            XCTAssertNil(try missing.data(as: Dinosaur?.self))
            XCTAssertThrowsError(try missing.data(as: Dinosaur.self))
        }
    }
}
