import HearthCore
import HearthStorage
import Logging
import XCTest

final class CompactionTests: XCTestCase {
    let logs = LogCapture()

    func testWantsCompactionFollowsWALSizeRelativeToTheSnapshot() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let options = StorageOptions(compactionMinBytes: 4_000, compactionRatio: 2.0)
        let opened = try Storage.open(directory: dir.path, options: options, logger: logs.logger)
        let storage = opened.storage
        var workload = Workload(seed: 11)
        XCTAssertFalse(storage.wantsCompaction)
        while storage.walBytes <= 4_000 {
            XCTAssertFalse(storage.wantsCompaction)
            try storage.append(workload.batch(3))
        }
        XCTAssertTrue(storage.wantsCompaction)
        storage.compact(root: workload.database.root, rev: workload.database.rev)
        XCTAssertFalse(storage.wantsCompaction, "not while one runs")
        storage.waitForCompaction()
        XCTAssertFalse(storage.isCompacting)
        XCTAssertGreaterThan(storage.snapshotBytes, 0)
        XCTAssertEqual(storage.walBytes, 16, "a new segment holding only its header")
        XCTAssertFalse(storage.wantsCompaction)
        // Now the threshold is max(4000, 2 × snapshot bytes).
        let threshold = max(4_000, 2 * storage.snapshotBytes)
        while storage.walBytes <= threshold {
            XCTAssertFalse(storage.wantsCompaction)
            try storage.append(workload.batch(3))
        }
        XCTAssertTrue(storage.wantsCompaction)
        try storage.close()
        XCTAssertEqual(dir.snapshots().count, 1)
    }

    func testCompactionRemovesOldFilesOnlyAfterTheNewSnapshotIsDurable() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 12)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(workload.batch(5))
        storage.compact(root: workload.database.root, rev: 5)
        storage.waitForCompaction()
        XCTAssertEqual(dir.snapshots(), ["snapshot-00000000000000000005"])
        XCTAssertEqual(dir.segments(), ["wal-00000000000000000006.log"])
        try storage.append(workload.batch(4))
        storage.compact(root: workload.database.root, rev: 9)
        try storage.append(workload.batch(2))
        storage.waitForCompaction()
        XCTAssertEqual(dir.snapshots(), ["snapshot-00000000000000000009"])
        XCTAssertEqual(dir.segments(), ["wal-00000000000000000010.log"])
        XCTAssertEqual(
            String(decoding: dir.read("MANIFEST"), as: UTF8.self),
            "{\"format\":1,\"snapshot\":\"snapshot-00000000000000000009\",\"rev\":9}\n")
        // Compacting again at the same revision needs no new segment.
        storage.compact(root: workload.database.root, rev: 11)
        storage.waitForCompaction()
        storage.compact(root: workload.database.root, rev: 11)
        storage.waitForCompaction()
        XCTAssertEqual(dir.segments(), ["wal-00000000000000000012.log"])
        try storage.close()
        XCTAssertEqual(storage.compactionCounts.completed, 4)
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 11)
        XCTAssertEqual(recovered.root, workload.database.root)
    }

    func testCompactionAtAStaleRevisionIsIgnored() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 13)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(workload.batch(3))
        storage.compact(root: .empty, rev: 2)
        storage.waitForCompaction()
        XCTAssertEqual(storage.compactionCounts.completed, 0)
        XCTAssertTrue(dir.snapshots().isEmpty)
        try storage.close()
    }

    func testLeftoversOfAnInterruptedCompactionAreIgnoredAndRemoved() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 14)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(workload.batch(6))
        storage.compact(root: workload.database.root, rev: 6)
        storage.waitForCompaction()
        try storage.append(workload.batch(3))
        try storage.close()
        // A crash mid-compaction leaves a temporary snapshot, an unreferenced one and a
        // temporary manifest behind.
        dir.write("snapshot-00000000000000000009.tmp", [1, 2, 3])
        dir.write("snapshot-00000000000000000008", [4, 5, 6])
        dir.write("MANIFEST.tmp", Array("{".utf8))
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 9)
        XCTAssertEqual(recovered.root, workload.database.root)
        XCTAssertEqual(
            dir.names(), ["LOCK", "MANIFEST", "snapshot-00000000000000000006", "wal-00000000000000000007.log"])
    }

    func testRestartFromALargeSnapshotIsFast() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        // 100,000 leaves under 1,000 parents; the 1M-node figure is measured in release builds.
        var children = ChildMap()
        for i in 0..<1_000 {
            var leaves = ChildMap()
            for j in 0..<100 {
                leaves.insert(
                    Key("f\(j)"), .leaf(j % 3 == 0 ? .string("value \(i)-\(j)") : .number(.int(Int64(i * j)))))
            }
            children.insert(Key("user\(i)"), .object(leaves))
        }
        let root = Node.object(children)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        storage.compact(root: root, rev: 0)
        try storage.close()
        let started = ContinuousClock.now
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        let elapsed = ContinuousClock.now - started
        try reopened.close()
        XCTAssertEqual(recovered.root, root)
        XCTAssertLessThan(elapsed, .seconds(10), "debug build; release is far faster")
    }
}
