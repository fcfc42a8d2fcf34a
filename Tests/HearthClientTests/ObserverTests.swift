import XCTest

@testable import HearthClient

/// "type key prev" lines, for comparing event streams.
typealias EventLine = String

final class ObserverTests: XCTestCase {
    func testChildAndValueEvents() async throws {
        try await withServer { server in
            let db = server.client()
            let writer = server.client()
            defer {
                db.goOffline()
                writer.goOffline()
            }
            let scores = db.reference(withPath: "scores")
            try await writer.reference(withPath: "scores").setValue(["a": 1, "b": 2, "c": 3])
            let events = Recorder<EventLine>()
            let query = scores.queryOrderedByValue().queryLimited(toLast: 2)
            var handles: [DatabaseHandle] = []
            for type in [DataEventType.childAdded, .childRemoved, .childChanged, .childMoved] {
                handles.append(
                    query.observe(type) { snapshot, prev in
                        events.append("\(type) \(snapshot.key)=\(snapshot.value ?? "nil") \(prev ?? "-")")
                    })
            }
            let values = Recorder<[String]>()
            handles.append(query.observe(.value) { values.append($0.children.map(\.key)) })
            try await values.wait(for: 1)
            XCTAssertEqual(events.all, ["childAdded b=2 -", "childAdded c=3 b"])

            // a rises to the top: b is pushed out of the window.
            try await writer.reference(withPath: "scores/a").setValue(10)
            try await values.wait(for: 2)
            // c changes within the window.
            try await writer.reference(withPath: "scores/c").setValue(30)
            try await values.wait(for: 3)
            XCTAssertEqual(
                events.all,
                [
                    "childAdded b=2 -", "childAdded c=3 b", "childRemoved b=2 -", "childAdded a=10 c",
                    "childMoved c=30 a", "childChanged c=30 a",
                ])
            XCTAssertEqual(values.all, [["b", "c"], ["c", "a"], ["a", "c"]])

            for handle in handles { query.removeObserver(withHandle: handle) }
            XCTAssertEqual(db.repo.listenerCount, 0)
            try await writer.reference(withPath: "scores/b").setValue(100)
            let single = Recorder<Int>()
            query.observeSingleEvent(of: .value) { single.append(Int($0.childrenCount)) }
            try await single.wait(for: 1)
            XCTAssertEqual(values.all.count, 3, "a removed observer was called")
            XCTAssertEqual(events.all.count, 6, "a removed observer was called")
            try await eventually("the single-event observer to go") { db.repo.listenerCount == 0 }

            // removeAllObservers removes the query's observers only.
            let plain = Recorder<Int>()
            scores.observe(.value) { _ in plain.append(1) }
            query.observe(.value) { _ in plain.append(2) }
            try await plain.wait(for: 2)
            query.removeAllObservers()
            XCTAssertEqual(db.repo.listenerCount, 1)
            scores.removeAllObservers()
            XCTAssertEqual(db.repo.listenerCount, 0)
        }
    }

    func testPreviousSiblingKeyAndCancel() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let ref = db.reference(withPath: "items")
            try await ref.setValue(["x": ["n": 2], "y": ["n": 1]])
            let added = Recorder<String>()
            ref.queryOrdered(byChild: "n").observe(
                .childAdded,
                andPreviousSiblingKeyWith: { snapshot, prev in
                    added.append("\(snapshot.key)<\(prev ?? "-")")
                })
            try await assertEqual(await added.wait(for: 2), ["y<-", "x<y"])

            let cancelled = Recorder<HearthError.Code>()
            ref.queryLimited(toFirst: 0).observe(.value, with: { _ in XCTFail("refused query delivered") }) {
                cancelled.append($0.hearthCode ?? .internal)
            }
            try await assertEqual(await cancelled.wait(for: 1), [.invalidQuery])
        }
    }

    func testAsyncSequenceUnsubscribesWhenIterationEnds() async throws {
        try await withServer { server in
            let db = server.client()
            let writer = server.client()
            defer {
                db.goOffline()
                writer.goOffline()
            }
            let ref = db.reference(withPath: "feed")
            try await ref.setValue(["a": 1])
            let iteration = Task {
                var keys: [String] = []
                for try await event in ref.events(of: .childAdded) {
                    keys.append(event.snapshot.key)
                    if keys.count == 2 { break }
                }
                return keys
            }
            try await eventually("the sequence to observe") { db.repo.listenerCount == 1 }
            try await writer.reference(withPath: "feed/b").setValue(2)
            let keys = try await iteration.value
            XCTAssertEqual(keys, ["a", "b"])
            try await eventually("the observer to be removed") { db.repo.listenerCount == 0 }

            // A refused query ends the sequence with its error.
            do {
                for try await _ in ref.queryOrdered(byChild: "$key").events(of: .value) {}
                XCTFail("the sequence of an invalid query did not throw")
            } catch {
                XCTAssertEqual(error.hearthCode, .invalidQuery)
            }
        }
    }
}
