import Foundation
import HearthJSON
import XCTest

@testable import HearthClient

/// The cache, listen deduplication, persistence, exactly-once writes and resume from a
/// revision, seen on the wire through a proxy (docs/client.md "Local events and the cache").
final class SyncTests: XCTestCase {
    func testGetDataAnswersFromTheCacheWhenOffline() async throws {
        try await withServer { server in
            let db = server.client()
            let profile = db.reference(withPath: "profile")
            try await profile.setValue(["name": "Ada", "born": 1815])
            let values = Recorder<JSONValue>()
            profile.observe(.value) { values.append($0.json) }
            try await values.wait(for: 1)

            let online = try await profile.getData()
            XCTAssertFalse(online.isFromCache)
            db.goOffline()
            profile.child("born").setValue(1816, withCompletionBlock: nil)
            let offline = try await profile.getData()
            XCTAssertTrue(offline.isFromCache)
            XCTAssertEqual(offline.childSnapshot(forPath: "born").value as? Int, 1816, "pending writes show")
            let name = try await db.reference(withPath: "profile/name").getData()
            XCTAssertTrue(name.isFromCache)
            XCTAssertEqual(name.value as? String, "Ada", "a location below a listened one reads from its cache")
        }
    }

    func testObserversOfOneQueryShareOneSubscription() async throws {
        try await withServer { server in
            let proxy = try await WireProxy.start(upstreamPort: server.configuration.port)
            defer { Task { await proxy.stop() } }
            let db = Database(url: proxy.url)
            let scores = db.reference(withPath: "scores").queryOrderedByValue().queryLimited(toLast: 2)
            let values = Recorder<JSONValue>()
            let added = Recorder<String>()
            let first = scores.observe(.value) { values.append($0.json) }
            let second = scores.observe(.childAdded) { added.append($0.key) }
            try await values.wait(for: 1)
            try await db.reference(withPath: "scores").setValue(["a": 1, "b": 3, "c": 2])
            try await added.wait(for: 2)
            XCTAssertEqual(proxy.requests("subscribe"), 1, "two observers of one query: one subscription")

            let plain = db.reference(withPath: "scores").observe(.value) { _ = $0 }
            try await eventually("a second subscription") { proxy.requests("subscribe") == 2 }
            scores.removeObserver(withHandle: first)
            try await Task.sleep(nanoseconds: 100_000_000)
            XCTAssertEqual(proxy.requests("unsubscribe"), 0, "an observer is left on the query")
            scores.removeObserver(withHandle: second)
            db.reference(withPath: "scores").removeObserver(withHandle: plain)
            try await eventually("both unsubscribed") { proxy.requests("unsubscribe") == 2 }
        }
    }

    func testKeepSyncedSubscribesWithoutObservers() async throws {
        try await withServer { server in
            let proxy = try await WireProxy.start(upstreamPort: server.configuration.port)
            defer { Task { await proxy.stop() } }
            let db = Database(url: proxy.url)
            let kept = db.reference(withPath: "kept")
            kept.keepSynced(true)
            try await eventually("a subscription") { proxy.requests("subscribe") == 1 }
            try await server.client().reference(withPath: "kept").setValue("fresh")
            try await Task.sleep(nanoseconds: 200_000_000)
            db.goOffline()
            let offline = try await kept.getData()
            XCTAssertTrue(offline.isFromCache)
            XCTAssertEqual(offline.value as? String, "fresh")
            kept.keepSynced(false)
        }
    }

    func testARetriedIncrementCountsOnce() async throws {
        try await withServer { server in
            let proxy = try await WireProxy.start(upstreamPort: server.configuration.port)
            defer { Task { await proxy.stop() } }
            let db = quicklyReconnecting(proxy.url)
            try await db.waitForConnection()
            // The server gets the write and applies it; its answer never reaches the client,
            // which reconnects and sends the write again with the same write id.
            proxy.cut(afterRequestContaining: #""op":"set""#)
            let error = await completion {
                db.reference(withPath: "visits").setValue(ServerValue.increment(1), withCompletionBlock: $0)
            }
            XCTAssertNil(error)
            let stored = try await server.client().reference(withPath: "visits").getData()
            XCTAssertEqual(stored.value as? Int, 1, "applied once although sent twice")
        }
    }

    func testAReconnectSendsOnlyWhatChanged() async throws {
        try await withServer { server in
            let admin = server.client()
            var children: [String: Any] = [:]
            for i in 0..<10_000 { children[String(format: "k%05d", i)] = ["n": i, "text": "child \(i)"] }
            try await admin.reference(withPath: "big").setValue(children)

            let proxy = try await WireProxy.start(upstreamPort: server.configuration.port)
            defer { Task { await proxy.stop() } }
            let db = quicklyReconnecting(proxy.url)
            let events = Recorder<String>()
            let big = db.reference(withPath: "big")
            big.observe(.childAdded) { events.append("added \($0.key)") }
            big.observe(.childChanged) { events.append("changed \($0.key)") }
            big.observe(.childRemoved) { events.append("removed \($0.key)") }
            try await events.wait(for: 10_000, timeout: 20)
            let fullBytes = proxy.bytesToClient

            db.goOffline()
            for i in 0..<4 { try await admin.reference(withPath: "big/k0000\(i)/n").setValue(-1 - i) }
            for i in 4..<7 { try await admin.reference(withPath: "big/k0000\(i)").removeValue() }
            for i in 7..<10 { try await admin.reference(withPath: "big/new\(i)").setValue(["n": i]) }
            proxy.resetCount()
            db.goOnline()
            try await events.wait(for: 10_010)
            try await Task.sleep(nanoseconds: 200_000_000)
            let catchUp = events.all.dropFirst(10_000)
            XCTAssertEqual(
                Array(catchUp),
                (4..<7).map { "removed k0000\($0)" } + (7..<10).map { "added new\($0)" }
                    + (0..<4).map { "changed k0000\($0)" })
            XCTAssertLessThan(
                proxy.bytesToClient, fullBytes / 50,
                "resumed with \(proxy.bytesToClient) bytes; the whole location took \(fullBytes)")
        }
    }

    func testCatchUpEventsOfOneLocationComeInGroupsAcrossObservers() async throws {
        try await withServer { server in
            let db = server.client()
            let room = db.reference(withPath: "room")
            try await room.setValue(["a": 1, "b": 2])
            let log = Recorder<String>()
            room.observe(.childRemoved) { log.append("A removed \($0.key)") }
            room.observe(.childAdded) { log.append("B added \($0.key)") }
            room.observe(.childChanged) { log.append("C changed \($0.key)") }
            room.observe(.childRemoved) { log.append("D removed \($0.key)") }
            room.observe(.value) { _ in log.append("E value") }
            room.observe(.childAdded) { log.append("F added \($0.key)") }
            try await log.wait(for: 5)
            let initial = log.all.count
            db.goOffline()
            let other = server.client()
            try await other.reference(withPath: "room/a").removeValue()
            try await other.reference(withPath: "room/c").setValue(3)
            try await other.reference(withPath: "room/b").setValue(20)
            db.goOnline()
            try await log.wait(for: initial + 6)
            try await Task.sleep(nanoseconds: 100_000_000)
            XCTAssertEqual(
                Array(log.all.dropFirst(initial)),
                ["A removed a", "D removed a", "B added c", "F added c", "C changed b", "E value"])
        }
    }

    func testPendingWritesAndTheCacheSurviveARestart() async throws {
        try await withServer { server in
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("hearth-client-store-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            func client(_ url: String) -> Database {
                var configuration = Database.Configuration()
                configuration.persistence = .init(directory: directory)
                configuration.reconnectMinDelay = .milliseconds(20)
                configuration.reconnectMaxDelay = .milliseconds(100)
                return Database(url: url, configuration: configuration)
            }
            try await server.client().reference(withPath: "notes").setValue(["n": "zero"])

            // A first run listens, goes offline and writes.
            do {
                let db = client(server.url)
                let values = Recorder<JSONValue>()
                db.reference(withPath: "notes").observe(.value) { values.append($0.json) }
                try await values.wait(for: 1)
                db.goOffline()
                db.reference(withPath: "notes/n").setValue("first", withCompletionBlock: nil)
                db.reference(withPath: "notes/n").setValue("second", withCompletionBlock: nil)
                db.reference(withPath: "visits").setValue(ServerValue.increment(1), withCompletionBlock: nil)
                try await values.wait(for: 3)
                try await Task.sleep(nanoseconds: 300_000_000)
            }
            // The app restarts without a server: reads come from the disk.
            do {
                let db = client("hearth://127.0.0.1:1")
                let values = Recorder<JSONValue>()
                db.reference(withPath: "notes").observe(.value) { values.append($0.json) }
                let seen = try await values.wait(for: 1)
                XCTAssertEqual(seen.first, .object([JSONMember("n", .string("second"))]))
                let note = try await db.reference(withPath: "notes/n").getData()
                XCTAssertTrue(note.isFromCache)
                XCTAssertEqual(note.value as? String, "second")
                db.goOffline()
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            // And with the server: the pending writes go out in order, each applied once.
            let db = client(server.url)
            try await db.waitForConnection()
            let reader = server.client()
            try await eventually("the writes applied") {
                (try await reader.reference(withPath: "visits").getData().value as? Int) == 1
            }
            let note = try await reader.reference(withPath: "notes/n").getData()
            XCTAssertEqual(note.value as? String, "second")
            try await eventually("no pending write left on disk") {
                let data = FileManager.default.contents(atPath: directory + "/pending.json") ?? Data()
                return String(decoding: data, as: UTF8.self) == "[]"
            }
        }
    }
}

/// A client of `url` that reconnects within about 100 ms.
func quicklyReconnecting(_ url: String) -> Database {
    var configuration = Database.Configuration()
    configuration.reconnectMinDelay = .milliseconds(20)
    configuration.reconnectMaxDelay = .milliseconds(100)
    return Database(url: url, configuration: configuration)
}
