import XCTest

@testable import HearthClient

final class ConnectionTests: XCTestCase {
    func testInfoConnectedAndServerTimeOffset() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let connected = Recorder<Bool>()
            db.reference(withPath: ".info/connected").observe(.value) { connected.append($0.value as? Bool ?? false) }
            try await eventually("connected") { connected.all.last == true }
            let offset = try await db.reference(withPath: ".info/serverTimeOffset").getData()
            let ms = try XCTUnwrap(offset.value as? Int)
            XCTAssertLessThan(abs(ms), 5_000, "a server on this machine has about the same clock")

            db.goOffline()
            try await eventually("disconnected") { connected.all.last == false }
            db.goOnline()
            try await eventually("reconnected") { connected.all.last == true }
            XCTAssertEqual(Array(connected.all.suffix(3)), [true, false, true])
        }
    }

    func testOnDisconnectOperations() async throws {
        try await withServer { server in
            let leaving = server.client()
            let watcher = server.client()
            defer { watcher.goOffline() }
            let presence = leaving.reference(withPath: "presence")
            try await presence.setValue(["ada": "online", "bob": "online", "cy": "online", "log": ["n": 1]])
            let registered = Recorder<String>()
            presence.child("ada").onDisconnectSetValue("offline") { error, _ in registered.append("set \(error == nil)")
            }
            presence.child("log").onDisconnectUpdateChildValues(["n": 2, "m": 3]) { error, _ in
                registered.append("update \(error == nil)")
            }
            presence.child("bob").onDisconnectRemoveValue { error, _ in registered.append("remove \(error == nil)") }
            presence.child("cy").onDisconnectSetValue("gone")
            presence.child("cy").cancelDisconnectOperations { error, _ in registered.append("cancel \(error == nil)") }
            let acks = try await registered.wait(for: 4)
            XCTAssertEqual(Set(acks), ["set true", "update true", "remove true", "cancel true"])

            leaving.goOffline()
            let ref = watcher.reference(withPath: "presence")
            try await eventually("the onDisconnect write") {
                (try await ref.child("ada").getData().value as? String) == "offline"
            }
            let after = try await ref.getData()
            XCTAssertFalse(after.hasChild("bob"))
            XCTAssertEqual(after.childSnapshot(forPath: "cy").value as? String, "online")
            XCTAssertEqual(after.childSnapshot(forPath: "log").value as? [String: Int], ["n": 2, "m": 3])

            // Registered operations are sent again on the next connection.
            try await ref.child("ada").setValue("online")
            leaving.goOnline()
            try await eventually("the client to reconnect and re-register") {
                try await leaving.repo.connectionStateForTesting.get().connected
            }
            let checkpoint = Recorder<Bool>()
            leaving.reference(withPath: "ping").setValue(1) { error, _ in checkpoint.append(error == nil) }
            try await checkpoint.wait(for: 1)
            leaving.goOffline()
            try await eventually("the re-registered onDisconnect write") {
                (try await ref.child("ada").getData().value as? String) == "offline"
            }
        }
    }

    func testWritesQueuedWhileOfflineArriveInOrder() async throws {
        try await withServer { server in
            let db = server.client()
            let watcher = server.client()
            defer {
                db.goOffline()
                watcher.goOffline()
            }
            let added = Recorder<Int>()
            watcher.reference(withPath: "queue").observe(.childAdded) { added.append($0.value as? Int ?? -1) }
            let ready = Recorder<Bool>()
            watcher.reference(withPath: "queue").observeSingleEvent(of: .value) { _ in ready.append(true) }
            try await ready.wait(for: 1)

            db.goOffline()
            try await eventually("offline") { try await !db.repo.connectionStateForTesting.get().connected }
            let acks = Recorder<Int>()
            let queue = db.reference(withPath: "queue")
            for i in 0..<20 {
                queue.childByAutoId().setValue(i) { error, _ in if error == nil { acks.append(i) } }
            }
            queue.child("last").setValue(99) { error, _ in if error == nil { acks.append(99) } }
            try await eventually("the writes to be queued") {
                try await db.repo.connectionStateForTesting.get().queued == 21
            }
            XCTAssertEqual(acks.all, [])
            db.goOnline()
            try await assertEqual(await acks.wait(for: 21), Array(0..<20) + [99])
            try await assertEqual(await added.wait(for: 21), Array(0..<20) + [99])
        }
    }

    func testListenersResumeWithOnlyTheDifferenceAfterServerRestart() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let items = db.reference(withPath: "items")
            try await items.setValue(["a": 1, "b": 2, "c": 3])
            let events = Recorder<String>()
            for type in [DataEventType.childAdded, .childRemoved, .childChanged] {
                items.observe(type) { events.append("\(type) \($0.key)") }
            }
            let values = Recorder<[String: Int]>()
            items.observe(.value) { values.append($0.value as? [String: Int] ?? [:]) }
            let limited = Recorder<String>()
            items.queryOrderedByKey().queryLimited(toFirst: 2).observe(.childAdded) { limited.append($0.key) }
            try await values.wait(for: 1)
            try await limited.wait(for: 2)
            try await events.wait(for: 3)

            await server.stop()
            try await eventually("the client to notice") {
                try await !db.repo.connectionStateForTesting.get().connected
            }
            try await server.restart()
            // Another client changes the data right after the restart, racing the reconnect.
            let other = server.client()
            defer { other.goOffline() }
            try await other.reference(withPath: "items").updateChildValues([
                "a": Optional<Int>.none as Any, "b": 20, "d": 4,
            ])
            try await eventually("the final value") { values.all.last == ["b": 20, "c": 3, "d": 4] }
            try await events.wait(for: 6)
            try await limited.wait(for: 3)
            // One more write, as a checkpoint: nothing arrives twice before it.
            try await other.reference(withPath: "items/e").setValue(5)
            try await events.wait(for: 7)
            // The value observer has a subscription of its own: its event may come after the
            // child events.
            try await eventually("the value with e") { values.all.last == ["b": 20, "c": 3, "d": 4, "e": 5] }
            let all = events.all
            XCTAssertEqual(Array(all.prefix(3)).sorted(), ["childAdded a", "childAdded b", "childAdded c"])
            XCTAssertEqual(Array(all[3..<6]).sorted(), ["childAdded d", "childChanged b", "childRemoved a"])
            XCTAssertEqual(all.last, "childAdded e")
            XCTAssertEqual(all.count, 7, "\(all)")
            XCTAssertEqual(limited.all, ["a", "b", "c"])
            XCTAssertEqual(values.all.first, ["a": 1, "b": 2, "c": 3])
        }
    }
}
