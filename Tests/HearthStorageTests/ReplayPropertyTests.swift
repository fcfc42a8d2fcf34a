import HearthCore
import HearthStorage
import Logging
import XCTest

/// Recovery replays the log in bulk; whatever the writes, the result must be exactly what
/// `Database.replay` gives one write at a time. The writes here are random overwrites on a small
/// key space, so that leaves turn into objects and back, objects empty out and lose their
/// priority, priorities are set on missing nodes, and so on.
final class ReplayPropertyTests: XCTestCase {
    func testBulkReplayMatchesDatabaseReplay() throws {
        let logs = LogCapture()
        for seed in 1...40 {
            let dir = TestDirectory("replay-\(seed)")
            defer { dir.remove() }
            var generator = RandomWrites(seed: UInt64(seed))
            var reference = Database()
            let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
            for round in 0..<40 {
                let batch = (0..<(1 + round % 5)).map { _ in generator.write(rev: reference.rev + 1, &reference) }
                try storage.append(batch)
                if round == 25, seed % 3 == 0 {
                    storage.compact(root: reference.root, rev: reference.rev)
                    storage.waitForCompaction()
                }
            }
            try storage.close()
            let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
            try reopened.close()
            XCTAssertEqual(recovered.rev, reference.rev, "seed \(seed)")
            XCTAssertEqual(recovered.root, reference.root, "seed \(seed)")
            XCTAssertEqual(recovered.root.hash, reference.root.hash, "seed \(seed)")
        }
    }

    /// Sequences where the order of writes matters for priorities and emptiness.
    func testBulkReplayOfOrderSensitiveSequences() throws {
        func path(_ text: String) throws -> Path { try Path.parse(text, allowPriority: true) }
        let five = Node.leaf(.number(.int(5)))
        let withPriority = Node.object(ChildMap().inserting(Key("c"), five), priority: .number(.int(9)))
        let sequences: [[(String, Node)]] = [
            // An object that empties out loses its priority, also when children come back.
            [("/s1/x", withPriority), ("/s1/x/c", .empty), ("/s1/x/d", five)],
            [("/s2/x", withPriority), ("/s2/x/c", .empty), ("/s2/x/.priority", five), ("/s2/x/d", five)],
            // A priority set on a missing node is dropped.
            [("/s3/x/.priority", five), ("/s3/x/d", five)],
            // A leaf written below keeps its priority as an object, until that empties out.
            [
                ("/s4/x", .leaf(.bool(true), priority: .string("p"))), ("/s4/x/c/d", five), ("/s4/x/c", .empty),
                ("/s4/x/e", five),
            ],
            // Removing a missing child of a leaf leaves the leaf.
            [("/s5/x", .leaf(.bool(true))), ("/s5/x/c", .empty), ("/s5/x/c/.priority", five)],
        ]
        // The root replaced, emptied and written again; then the sequences above below it.
        var writes: [(String, Node)] = [("/", withPriority), ("/c", .empty), ("/e", five), ("/e/.priority", five)]
        // A sibling keeps each parent from emptying out (which would hide the cases above).
        writes += (1...5).map { ("/s\($0)/keep", five) }
        // Interleave the sequences, then run them again over the result (and over a snapshot).
        var firstRoundEnd = 0
        for round in 0..<2 {
            for step in 0..<4 {
                for sequence in sequences where step < sequence.count { writes.append(sequence[step]) }
            }
            if round == 0 {
                writes.append(("/s1/x/c", five))
                firstRoundEnd = writes.count - 1
            }
        }
        let logs = LogCapture()
        let dir = TestDirectory()
        defer { dir.remove() }
        var reference = Database()
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        for (index, (text, node)) in writes.enumerated() {
            let write = CommittedWrite(rev: UInt64(index + 1), overwrites: [(try path(text), node)])
            reference.replay(write)
            try storage.append([write])
            // The second round replays over a snapshot, whose nodes are the base of the replay.
            if index == firstRoundEnd {
                storage.compact(root: reference.root, rev: reference.rev)
                storage.waitForCompaction()
            }
        }
        try storage.close()
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.root, reference.root)
        XCTAssertEqual(recovered.root.hash, reference.root.hash)
    }

    func testBulkReplayIntoAWideNode() throws {
        let logs = LogCapture()
        let dir = TestDirectory()
        defer { dir.remove() }
        var reference = Database()
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        let items = Key("items")
        // Many inserts, then removals and replacements among them: the merge path.
        var writes: [CommittedWrite] = []
        for i in 0..<3_000 {
            let key = Key(i % 7 == 0 ? "\(i)" : "k\(i)")
            writes.append(
                CommittedWrite(rev: UInt64(i + 1), overwrites: [(Path([items, key]), .leaf(.number(.int(Int64(i)))))]))
        }
        for i in stride(from: 0, to: 3_000, by: 3) {
            let key = Key(i % 7 == 0 ? "\(i)" : "k\(i)")
            let node: Node = i % 2 == 0 ? .empty : .leaf(.string("x"), priority: .number(.int(1)))
            writes.append(CommittedWrite(rev: UInt64(writes.count + 1), overwrites: [(Path([items, key]), node)]))
        }
        for chunk in stride(from: 0, to: writes.count, by: 100) {
            let batch = Array(writes[chunk..<min(chunk + 100, writes.count)])
            for write in batch { reference.replay(write) }
            try storage.append(batch)
        }
        try storage.close()
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.root, reference.root)
        XCTAssertEqual(recovered.root.child(items).childCount, reference.root.child(items).childCount)
    }
}

/// Random overwrites over the keys a and 1 (and `.priority`), up to three levels deep: a small
/// space, so that the same nodes are written over and over.
struct RandomWrites {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }

    private mutating func random(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }

    private mutating func key() -> Key { Key(["a", "1"][random(2)]) }

    private mutating func priority() -> Priority? {
        switch random(3) {
        case 0: return nil
        case 1: return .number(.int(Int64(random(5))))
        default: return .string("p\(random(3))")
        }
    }

    private mutating func node(depth: Int) -> Node {
        switch random(depth > 1 ? 4 : 6) {
        case 0: return .empty
        case 1: return .leaf(.number(.int(Int64(random(10)))), priority: priority())
        case 2: return .leaf(.string("s\(random(4))"))
        case 3: return .leaf(.bool(random(2) == 0), priority: priority())
        default:
            var children = ChildMap()
            for _ in 0..<(1 + random(2)) {
                let child = node(depth: depth + 1)
                if !child.isEmpty { children.insert(key(), child) }
            }
            return .object(children, priority: priority())
        }
    }

    /// A write of 1–3 overwrites at revision `rev`, applied to `reference`.
    mutating func write(rev: UInt64, _ reference: inout Database) -> CommittedWrite {
        var overwrites: [(path: Path, node: Node)] = []
        for _ in 0..<(1 + random(3)) {
            var segments = (0..<random(3)).map { _ in key() }
            var node = node(depth: segments.count)
            if random(5) == 0 {
                segments.append(Key.priority)
                node = random(4) == 0 ? .empty : .leaf(random(2) == 0 ? .number(.int(Int64(random(9)))) : .string("z"))
            }
            overwrites.append((Path(segments), node))
        }
        let write = CommittedWrite(rev: rev, overwrites: overwrites)
        reference.replay(write)
        return write
    }
}
