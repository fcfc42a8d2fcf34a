import Foundation
import XCTest

@testable import HearthCore

/// `Node.set(_:to:)` and `Database.applyInPlace` change the nodes no copy shares in place: the
/// result must be what the copying `setting(_:to:)` gives, and every snapshot taken before must
/// stay exactly as it was.
final class InPlaceWriteTests: XCTestCase {
    /// Few keys near the root (paths collide often, so writes land in nodes written before) and
    /// many at the third level (a deep AVL tree of children).
    private func randomPath(_ rng: inout SplitMix64) -> Path {
        var segments: [Key] = []
        for depth in 0..<Int.random(in: 0...4, using: &rng) {
            let width = depth == 2 ? 60 : 3
            segments.append(Key("k\(Int.random(in: 0..<width, using: &rng))"))
        }
        if Int.random(in: 0..<8, using: &rng) == 0 { segments.append(Key.priority) }
        return Path(segments)
    }

    private func randomNode(_ rng: inout SplitMix64, depth: Int = 2) -> Node {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return .empty
        case 1: return .leaf(.number(.int(Int64.random(in: 0...9, using: &rng))))
        case 2 where depth > 0:
            var node = Node.empty
            for i in 0..<Int.random(in: 0...4, using: &rng) {
                node = node.settingChild(Key("k\(i)"), randomNode(&rng, depth: depth - 1))
            }
            return Bool.random(using: &rng) ? node.withPriority(.number(.int(1))) : node
        default:
            return .leaf(
                .string("s\(Int.random(in: 0...9, using: &rng))"),
                priority: Bool.random(using: &rng) ? .string("p") : nil)
        }
    }

    /// Random writes (sets, removals, priorities, leaves turned into objects and back) through
    /// `set` against a model built with `setting` from independent copies of the same values,
    /// with snapshots taken between them: each snapshot must still equal its model and serialize
    /// to the same bytes at the end.
    func testInPlaceSetsMatchCopyingSetsAndLeaveEverySnapshotUnchanged() {
        for seed in 0..<20 {
            var rng = SplitMix64(seed: UInt64(seed))
            var tree = Node.empty
            var model = Node.empty
            var snapshots: [(snapshot: Node, model: Node, bytes: [UInt8])] = []
            for step in 0..<2000 {
                let path = randomPath(&rng)
                var twin = rng
                let node = randomNode(&rng)
                let sameNode = randomNode(&twin)  // built apart, so the model shares nothing with the tree
                tree.set(path, to: node)
                model = model.setting(path, to: sameNode)
                XCTAssertTrue(tree == model, "seed \(seed), step \(step): set \(path) diverged")
                if Int.random(in: 0..<50, using: &rng) == 0 {
                    snapshots.append((tree, model, tree.jsonBytes(format: .export)))
                }
            }
            for (index, taken) in snapshots.enumerated() {
                XCTAssertTrue(taken.snapshot == taken.model, "seed \(seed): snapshot \(index) changed")
                XCTAssertEqual(
                    taken.snapshot.jsonBytes(format: .export), taken.bytes, "seed \(seed): snapshot \(index)")
            }
        }
    }

    /// `set(_:toNonEmpty:)` writes what `set(_:to:)` writes, in place where no snapshot shares
    /// the path, and returns the undo point the walk `undoPoint(ofNonEmptySetAt:)` finds in the
    /// tree before it; setting that point back gives that tree again, and snapshots stay as
    /// they were.
    func testNonEmptySetsReturnTheUndoPointOfTheTreeBefore() {
        for seed in 0..<20 {
            var rng = SplitMix64(seed: UInt64(100 + seed))
            var tree = Node.empty
            var model = Node.empty
            var snapshots: [(snapshot: Node, bytes: [UInt8])] = []
            var leavesTurnedIntoObjects = 0
            for step in 0..<2000 {
                var path = randomPath(&rng)
                if path.last == Key.priority { path = Path(Array(path.segments.dropLast())) }
                var node = randomNode(&rng)
                if node.isEmpty { node = .leaf(.bool(true)) }
                let walked = model.undoPoint(ofNonEmptySetAt: path)
                let before = model
                let point = tree.set(path, toNonEmpty: node)
                model = model.setting(path, to: node)
                XCTAssertEqual(point.path, walked.path, "seed \(seed), step \(step): undo point of \(path)")
                XCTAssertTrue(point.before == walked.before, "seed \(seed), step \(step): undo node of \(path)")
                XCTAssertTrue(tree == model, "seed \(seed), step \(step): set \(path) diverged")
                XCTAssertTrue(
                    model.setting(point.path, to: point.before) == before, "seed \(seed), step \(step): undo")
                if point.path.count < path.count { leavesTurnedIntoObjects += 1 }
                if Int.random(in: 0..<50, using: &rng) == 0 {
                    snapshots.append((tree, tree.jsonBytes(format: .export)))
                }
            }
            XCTAssertGreaterThan(leavesTurnedIntoObjects, 0, "seed \(seed)")
            for (index, taken) in snapshots.enumerated() {
                XCTAssertEqual(
                    taken.snapshot.jsonBytes(format: .export), taken.bytes, "seed \(seed): snapshot \(index)")
            }
        }
    }

    /// Only a non-empty value at one path is a `Write.nonEmptySet`, the writes
    /// `applyInPlace(settingNonEmpty:at:now:)` takes; it declines a value that resolves to empty
    /// and then changes nothing.
    func testApplyInPlaceSettingNonEmptyDeclinesOtherWrites() throws {
        var database = Database()
        let path = try Path.parse("/a/b")
        let one = PreparedValue(node: .leaf(.number(.int(1))))
        let set = try XCTUnwrap(Write.set(path: path, value: one).nonEmptySet)
        XCTAssertNotNil(database.applyInPlace(settingNonEmpty: set.value, at: set.path, now: 0))
        let declined: [Write] = [
            .set(path: path, value: PreparedValue(node: .empty)),
            .set(path: path.appending(Key.priority), value: one),
            try Write.update(at: path, values: [(Path([Key("c")]), one)]),
            .overwrites([(path, one), (path, one)]),
        ]
        for write in declined {
            XCTAssertNil(write.nonEmptySet, "\(write)")
        }
        XCTAssertNil(database.applyInPlace(settingNonEmpty: PreparedValue(node: .empty), at: path, now: 0))
        XCTAssertEqual(database.rev, 1)
        XCTAssertEqual(database.root.child(at: path), .leaf(.number(.int(1))))
    }

    /// The identity of an object's map (its root branch): the same after a write in place.
    private func identity(_ node: Node) -> ObjectIdentifier? {
        guard case .children(let map) = node.storage, let root = map.root else { return nil }
        return ObjectIdentifier(root)
    }

    /// The point of it: a write to an existing place of a tree nobody else holds keeps the
    /// objects on its path (no allocation per level); after a snapshot it copies them, once.
    func testAWriteToAnExistingPlaceChangesTheTreeInPlaceUnlessASnapshotSharesIt() throws {
        var tree = Node.empty
        for i in 0..<100 { tree.set(try Path.parse("/users/u\(i)/name"), to: .leaf(.string("n\(i)"))) }
        let path = try Path.parse("/users/u42/name")
        let rootBranch = identity(tree)
        tree.set(path, to: .leaf(.string("changed")))
        XCTAssertEqual(identity(tree), rootBranch, "a tree nobody shares is changed in place")
        XCTAssertEqual(tree.child(at: path), .leaf(.string("changed")))

        let snapshot = tree
        tree.set(path, to: .leaf(.string("again")))
        XCTAssertNotEqual(identity(tree), identity(snapshot), "a shared tree is copied")
        XCTAssertEqual(snapshot.child(at: path), .leaf(.string("changed")))
        XCTAssertEqual(tree.child(at: path), .leaf(.string("again")))
        let copiedOnce = identity(tree)
        tree.set(path, to: .leaf(.string("third")))
        XCTAssertEqual(identity(tree), copiedOnce, "the copy is the tree's own: the next write is in place")
        XCTAssertEqual(snapshot.child(at: path), .leaf(.string("changed")))
    }

    /// A priority set below objects nobody else holds changes them in place down to the node
    /// whose priority it sets: a wide object on the way is not copied.
    func testAPrioritySetKeepsTheObjectsAboveItsNode() throws {
        var tree = Node.empty
        for i in 0..<1_000 { tree.set(try Path.parse("/rooms/r\(i)/name"), to: .leaf(.string("n\(i)"))) }
        let rooms = identity(tree.child(at: try Path.parse("/rooms")))
        tree.set(try Path.parse("/rooms/r500/.priority", allowPriority: true), to: .leaf(.number(.int(7))))
        XCTAssertEqual(identity(tree.child(at: try Path.parse("/rooms"))), rooms, "the wide object is not copied")
        XCTAssertEqual(tree.child(at: try Path.parse("/rooms/r500")).priority, .number(.int(7)))
        XCTAssertEqual(tree.child(at: try Path.parse("/rooms/r500/name")), .leaf(.string("n500")))
    }

    /// `applyInPlace` commits what `apply` commits, for every kind of write.
    func testApplyInPlaceCommitsWhatApplyCommits() throws {
        var rng = SplitMix64(seed: 7)
        var inPlace = Database()
        var copying = Database()
        for step in 0..<3000 {
            var path = randomPath(&rng)
            if path.last == Key.priority { path = Path(Array(path.segments.dropLast())) }
            let write: Write
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                write = .set(path: path, value: PreparedValue(node: randomNode(&rng)))
            case 1:
                write = try Write.update(
                    at: path,
                    values: [
                        (Path([Key("k0")]), PreparedValue(node: randomNode(&rng))),
                        (Path([Key("k1"), Key("k2")]), PreparedValue(node: randomNode(&rng))),
                    ])
            default:
                write = .overwrites([
                    (path, PreparedValue(node: randomNode(&rng))),
                    (path.appending(Key("k1")), PreparedValue(node: randomNode(&rng))),
                ])
            }
            // A snapshot every tenth write; the others change the tree in place.
            let snapshot = step % 10 == 0 ? inPlace : nil
            let expectedBefore = copying.root
            guard case .committed(let a) = inPlace.applyInPlace(write, now: 0),
                case .committed(let b, _) = copying.apply(write, now: 0)
            else { return XCTFail("step \(step): a write did not commit") }
            XCTAssertEqual(a.rev, b.rev)
            XCTAssertEqual(a.overwrites.map(\.path), b.overwrites.map(\.path))
            XCTAssertTrue(inPlace.root == copying.root, "step \(step)")
            if let snapshot {
                XCTAssertEqual(snapshot.rev, inPlace.rev - 1)
                XCTAssertTrue(snapshot.root == expectedBefore, "step \(step): the snapshot changed")
            }
        }
    }

    /// An entry's value may change in place only when no other map shares a branch on the way to
    /// it: not when a snapshot shares the root, nor when only a branch below the root is shared
    /// (a map that a write copied a path of after a snapshot). Found in one walk of the depth.
    func testAnEntryIsFoundForChangingInPlaceOnlyWhenNoOtherMapSharesItsWay() {
        let entries = (0..<65_536).map { (CountedKey(2 * $0), 2 * $0) }
        var map = SortedTree(sortedUniqueEntries: entries)
        let height = Int(map.root?.height ?? 0)
        var snapshot: SortedTree<CountedKey, Int>? = map
        XCTAssertEqual(snapshot?.count, entries.count)
        XCTAssertNil(map.withUniqueBranch(holding: CountedKey(24_690)) { _ in }, "shared from the root")

        map.insert(CountedKey(1), 1)  // copies the path to 1: the root is the map's own, the rest shared
        XCTAssertNotNil(map.withUniqueBranch(holding: CountedKey(0)) { _ in }, "on the copied path")
        XCTAssertNil(map.withUniqueBranch(holding: CountedKey(100_000)) { _ in }, "shared below the root")
        XCTAssertNil(map.withUniqueBranch(holding: CountedKey(3)) { _ in }, "absent")

        snapshot = nil
        let before = CountedKey.comparisons.value
        let found = map.withUniqueBranch(holding: CountedKey(100_000)) { entry -> Bool in
            entry.value = -1
            return true
        }
        XCTAssertEqual(found, true, "nothing else shares the map once the snapshot is gone")
        XCTAssertLessThanOrEqual(CountedKey.comparisons.value - before, height + 1)
        XCTAssertEqual(map[CountedKey(100_000)], -1)
    }
}

/// An integer key that counts the comparisons made with it.
private struct CountedKey: ThreeWayComparable {
    static let comparisons = Counter()
    let value: Int
    init(_ value: Int) { self.value = value }

    static func compare(_ lhs: CountedKey, _ rhs: CountedKey) -> Int {
        comparisons.increment()
        return lhs.value < rhs.value ? -1 : (lhs.value == rhs.value ? 0 : 1)
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var value: Int { lock.withLock { count } }
        func increment() { lock.withLock { count += 1 } }
    }
}
