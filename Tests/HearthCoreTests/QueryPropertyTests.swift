import HearthCore
import HearthJSON
import XCTest

/// Random writes against random queries, checked after every write against a naive model:
/// (a) each view's window equals "sort every child, filter by the bounds, then limit" computed
/// here independently of the engine; (b) the events are exactly the diff of the old and new
/// windows (removed / added / changed / moved sets, nodes, prevKeys from the new window, group
/// order, index order within groups), replaying them onto the old window gives the new one,
/// and `value` comes last, exactly when something changed (docs/PROTOCOL.md, "Events").
final class QueryPropertyTests: XCTestCase {
    static let keys = ["a", "b", "c", "aa", "B", "1", "01", "10", "-1", "\u{E9}", "e\u{301}", "z"]
    static let strings = ["", "a", "Z", "ab", "1", "😀", "\u{FF5E}", "e\u{301}"]

    // MARK: The test

    struct Subject {
        var query: Query
        var location: Path
        var view: View
        var sharedIndex: Bool
        var replayed: [(key: Key, node: Node)]
    }

    struct IndexSlot: Hashable {
        var location: Path
        var order: QueryOrder
    }

    func testRandomWritesAgainstRandomQueries() throws {
        var totalWrites = 0
        var totalEvents = 0
        for seed: UInt64 in [1, 2, 3, 4, 5] {
            let (writes, events) = try run(seed: seed, writes: 400, views: 20)
            totalWrites += writes
            totalEvents += events
        }
        XCTAssertGreaterThan(totalEvents, totalWrites, "the writes should raise plenty of events")
    }

    func run(seed: UInt64, writes: Int, views: Int) throws -> (Int, Int) {
        var rng = SplitMix64(seed: seed)
        var database = Database(
            root: try node(.object([JSONMember("list", Self.listJSON(&rng)), JSONMember("other", .int(1))])))
        let locations = [try path("/list"), try path("/list"), try path("/list"), try path("/"), try path("/list/a")]
        var indexes: [IndexSlot: ChildIndex] = [:]
        var subjects: [Subject] = []
        for _ in 0..<views {
            let query = try Self.query(&rng)
            let spec = try QuerySpec(json: query.wire, limits: .default)
            XCTAssertEqual(
                try QuerySpec(json: spec.json, limits: .default), spec, "round trip of \(query.wire.jsonString)")
            let location = rng.pick(locations)
            let node = database.root.child(at: location)
            let slot = IndexSlot(location: location, order: spec.order)
            if indexes[slot] == nil { indexes[slot] = ChildIndex(order: spec.order, location: node) }
            let shared = rng.chance(0.6)
            let view = View(spec: spec, location: node, index: shared ? indexes[slot] : nil)
            let initial = view.initialEvents()
            let expected = query.window(node)
            check(window: view.window, expected, "initial \(query.wire.jsonString)")
            XCTAssertEqual(initial.map(\.type), Array(repeating: .childAdded, count: expected.count) + [.value])
            XCTAssertEqual(
                initial.dropLast().map(\.prevKey), expected.indices.map { $0 == 0 ? nil : expected[$0 - 1].key })
            subjects.append(
                Subject(query: query, location: location, view: view, sharedIndex: shared, replayed: expected))
        }

        var eventCount = 0
        for step in 0..<writes {
            let write = try Self.write(&rng)
            let before = database.root
            _ = database.apply(write, now: 1_700_000_000_000)
            let after = database.root
            let unknown = rng.chance(0.1)
            for (slot, index) in indexes {
                var updated = index
                let changed = unknown ? nil : QueryTestSupport.changedChildren(at: slot.location, paths: write.paths)
                updated.update(
                    from: before.child(at: slot.location), to: after.child(at: slot.location), changedChildren: changed)
                XCTAssertEqual(updated.count, after.child(at: slot.location).childCount)
                indexes[slot] = updated
            }
            for i in subjects.indices {
                let subject = subjects[i]
                let oldLocation = before.child(at: subject.location)
                let newLocation = after.child(at: subject.location)
                let changed = unknown ? nil : QueryTestSupport.changedChildren(at: subject.location, paths: write.paths)
                let index =
                    subject.sharedIndex
                    ? indexes[IndexSlot(location: subject.location, order: subject.view.spec.order)] : nil
                var view = subject.view
                let events = view.apply(location: newLocation, changedChildren: changed, index: index)
                eventCount += events.count
                let label = { "seed \(seed) step \(step) \(subject.location) \(subject.query.wire.jsonString)" }
                let newWindow = subject.query.window(newLocation)
                check(window: view.window, newWindow, label())
                check(
                    events: events, old: subject.replayed, new: newWindow, query: subject.query,
                    oldLocation: oldLocation, newLocation: newLocation, label())
                if step % 16 == 0 {
                    XCTAssertEqual(
                        QueryEvaluator.window(view.spec, of: newLocation, index: index).map(\.key),
                        newWindow.map(\.key), label())
                    if !newLocation.isLeaf {
                        XCTAssertEqual(QueryTestSupport.renderedKeys(view), newWindow.map(\.key.string), label())
                    }
                }
                subjects[i].view = view
                subjects[i].replayed = newWindow
            }
        }
        return (writes, eventCount)
    }

    func check(
        window: [(key: Key, node: Node)], _ expected: [(key: Key, node: Node)], _ label: @autoclosure () -> String
    ) {
        XCTAssertEqual(window.map(\.key), expected.map(\.key), label())
        XCTAssertTrue(zip(window, expected).allSatisfy { $0.node == $1.node }, "window nodes: \(label())")
    }

    func check(
        events: [ViewEvent], old: [(key: Key, node: Node)], new: [(key: Key, node: Node)], query: Query,
        oldLocation: Node, newLocation: Node, _ label: @autoclosure () -> String
    ) {
        // Group order: removed, added, moved, changed, value (at most once, last).
        let ranks = events.map { EventType.allCases.firstIndex(of: $0.type) ?? 0 }
        XCTAssertEqual(ranks, ranks.sorted(), "group order: \(label())")
        XCTAssertLessThanOrEqual(events.filter { $0.type == .value }.count, 1, label())
        let children = events.filter { $0.type != .value }

        // The exact diff.
        let oldNodes = Dictionary(old.map { ($0.key, $0.node) }, uniquingKeysWith: { a, _ in a })
        let newNodes = Dictionary(new.map { ($0.key, $0.node) }, uniquingKeysWith: { a, _ in a })
        let newPrev = Dictionary(
            new.enumerated().map { ($0.element.key, $0.offset > 0 ? new[$0.offset - 1].key : nil) },
            uniquingKeysWith: { a, _ in a })
        let expectRemoved = old.map(\.key).filter { newNodes[$0] == nil }
        let expectAdded = new.map(\.key).filter { oldNodes[$0] == nil }
        let expectChanged = new.map(\.key).filter { key in oldNodes[key].map { $0 != newNodes[key] } ?? false }
        let expectMoved = expectChanged.filter { key in
            guard let o = oldNodes[key], let n = newNodes[key] else { return false }
            return query.order.moved(o, n)
        }
        func keys(_ type: EventType) -> [Key] { children.filter { $0.type == type }.compactMap(\.key) }
        XCTAssertEqual(keys(.childRemoved), expectRemoved, "removed: \(label())")
        XCTAssertEqual(keys(.childAdded), expectAdded, "added: \(label())")
        XCTAssertEqual(keys(.childChanged), expectChanged, "changed: \(label())")
        XCTAssertEqual(keys(.childMoved), expectMoved, "moved: \(label())")
        for event in children {
            guard let key = event.key else {
                XCTFail("child event without key: \(label())")
                continue
            }
            if event.type == .childRemoved {
                XCTAssertNil(event.prevKey, label())
                XCTAssertEqual(event.node, oldNodes[key], label())
            } else {
                XCTAssertEqual(event.prevKey, newPrev[key] ?? nil, "prevKey of \(event.type) \(key): \(label())")
                XCTAssertEqual(event.node, newNodes[key], label())
            }
        }

        // The value event: exactly when something changed (docs/PROTOCOL.md, "Events").
        var expectValue = !children.isEmpty
        if query.isUnfiltered {
            if (newLocation.isLeaf || newLocation.isEmpty) && newLocation != oldLocation { expectValue = true }
            if oldLocation.priority != newLocation.priority { expectValue = true }
        }
        XCTAssertEqual(events.last?.type == .value, expectValue, "value event: \(label())")

        // Replaying the events onto the old window reproduces the new one.
        XCTAssertEqual(Self.replay(events, onto: old).map(\.key), new.map(\.key), "replay: \(label())")
    }

    /// Applies child events to a window the way a client keeps a list: removals, then the moved
    /// children are taken out and added/moved ones are inserted after their prevKey (deferring
    /// one whose predecessor is not placed yet), then changes replace nodes.
    ///
    /// Strictly sequential application (each move in turn) is not enough: prevKeys come from the
    /// NEW window, so an added child may name a predecessor that has yet to move there, e.g.
    /// value order a:1 b:2 c:3 + update {b: 4, x: 5} → added x (prev b), moved b (prev c).
    static func replay(_ events: [ViewEvent], onto window: [(key: Key, node: Node)]) -> [(key: Key, node: Node)] {
        var list = window
        let movedKeys = Set(events.filter { $0.type == .childMoved }.compactMap(\.key))
        list.removeAll { entry in
            events.contains { $0.type == .childRemoved && $0.key == entry.key } || movedKeys.contains(entry.key)
        }
        var pending = events.filter { $0.type == .childAdded || $0.type == .childMoved }
        while !pending.isEmpty {
            let before = pending.count
            pending.removeAll { event in
                guard let key = event.key else { return true }
                if let prev = event.prevKey {
                    guard let at = list.firstIndex(where: { $0.key == prev }) else { return false }
                    list.insert((key, event.node), at: at + 1)
                } else {
                    list.insert((key, event.node), at: 0)
                }
                return true
            }
            if pending.count == before { break }
        }
        for event in events where event.type == .childChanged {
            if let at = list.firstIndex(where: { $0.key == event.key }) { list[at].node = event.node }
        }
        return list
    }
}
