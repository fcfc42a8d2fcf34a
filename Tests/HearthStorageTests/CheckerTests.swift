import Foundation
import HearthCore
import HearthStorage
import Logging
import XCTest

final class CheckerTests: XCTestCase {
    let logs = LogCapture()

    func testCheckReportsAConsistentDirectory() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 21)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(workload.batch(4))
        storage.compact(root: workload.database.root, rev: 4)
        try storage.append(workload.batch(3))
        try storage.close()
        let report = StorageChecker.check(directory: dir.path)
        XCTAssertTrue(report.isOK, report.description)
        XCTAssertEqual(report.rev, 7)
        XCTAssertEqual(report.snapshotRev, 4)
        XCTAssertEqual(report.segments, ["wal-00000000000000000005.log"])
        XCTAssertTrue(report.description.hasPrefix("OK: "), report.description)
    }

    func testCheckFindsTheFirstBadRecordAndRepairTruncatesThere() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 22)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        var ends: [Int] = []
        let segment = "wal-00000000000000000001.log"
        var states: [Database] = []
        for _ in 0..<6 {
            try storage.append(workload.batch(1))
            states.append(workload.database)
            ends.append(dir.logEnd(segment))
        }
        try storage.close()
        // Damage the third record (rev 3), which starts where the second ends.
        let original = dir.read(segment)
        var damaged = original
        damaged[ends[1] + 25] ^= 0x10
        dir.write(segment, damaged)

        let report = StorageChecker.check(directory: dir.path)
        XCTAssertFalse(report.isOK)
        XCTAssertEqual(report.problem?.file, dir.file(segment))
        XCTAssertEqual(report.problem?.offset, Int64(ends[1]))
        XCTAssertEqual(report.problem?.isTornTail, false)
        XCTAssertEqual(report.rev, 2)
        XCTAssertTrue(report.description.contains("hearth check --repair \(dir.path)"), report.description)
        XCTAssertEqual(dir.read(segment), damaged, "check changes nothing")

        let repaired = try StorageChecker.repair(directory: dir.path)
        XCTAssertTrue(repaired.isOK, repaired.description)
        XCTAssertEqual(repaired.rev, 2)
        let backup = try XCTUnwrap(repaired.backupDirectory)
        XCTAssertTrue(backup.hasPrefix(dir.path + "/backup-"), backup)
        XCTAssertEqual(TestDirectory.contents(backup + "/" + segment), damaged, "the backup is the file as it was")
        XCTAssertEqual(dir.read(segment), Array(damaged[..<ends[1]]))
        XCTAssertEqual(repaired.actions.count, 1)
        XCTAssertTrue(repaired.description.contains(backup), repaired.description)

        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 2)
        XCTAssertEqual(recovered.root, states[1].root)
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK)
    }

    func testRepairMovesTheSegmentsAfterTheBadRecordToTheBackup() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 23)
        let plan = FaultPlan()
        let storage = try Storage.open(
            directory: dir.path, fileSystem: FaultyFileSystem(plan: plan), logger: logs.logger
        ).storage
        for _ in 0..<3 {
            try storage.append(workload.batch(2))
            // A compaction whose snapshot rename (the second rename, after the new segment's)
            // fails still leaves a new segment behind.
            plan.failNth(.rename, 2)
            storage.compact(root: workload.database.root, rev: workload.database.rev)
            storage.waitForCompaction()
            plan.disarm()
        }
        try storage.close()
        XCTAssertEqual(storage.compactionCounts.failed, 3)
        XCTAssertEqual(
            dir.segments(),
            [
                "wal-00000000000000000001.log", "wal-00000000000000000003.log", "wal-00000000000000000005.log",
                "wal-00000000000000000007.log",
            ])
        XCTAssertTrue(dir.snapshots().isEmpty)
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK)

        // Damage the header of the second record of the second segment (rev 4, in the batch of
        // revs 3 and 4): the whole batch goes.
        let second = "wal-00000000000000000003.log"
        var bytes = dir.read(second)
        let firstRecordEnd = 16 + 20 + (Int(bytes[16]) | Int(bytes[17]) << 8 | Int(bytes[18]) << 16)
        bytes[firstRecordEnd + 9] ^= 0x01
        dir.write(second, bytes)
        let report = StorageChecker.check(directory: dir.path)
        XCTAssertEqual(report.problem?.file, dir.file(second))
        XCTAssertEqual(report.problem?.offset, Int64(firstRecordEnd))
        XCTAssertEqual(report.rev, 2)

        let repaired = try StorageChecker.repair(directory: dir.path)
        XCTAssertTrue(repaired.isOK, repaired.description)
        XCTAssertEqual(repaired.rev, 2)
        XCTAssertEqual(dir.read(second).count, 16, "cut at the start of the batch")
        XCTAssertEqual(repaired.actions.count, 3, repaired.description)
        let backup = try XCTUnwrap(repaired.backupDirectory)
        XCTAssertEqual(
            TestDirectory.names(backup),
            ["wal-00000000000000000003.log", "wal-00000000000000000005.log", "wal-00000000000000000007.log"])
        XCTAssertEqual(dir.segments(), ["wal-00000000000000000001.log", "wal-00000000000000000003.log"])

        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        XCTAssertEqual(recovered.rev, 2)
        var replay = Workload(seed: 23)
        _ = replay.batch(2)
        XCTAssertEqual(recovered.root, replay.database.root)
        // The log continues at rev 3.
        try reopened.append(replay.batch(2))
        try reopened.close()
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK)
    }

    func testRepairRebuildsAMissingManifest() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 24)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(workload.batch(5))
        storage.compact(root: workload.database.root, rev: 5)
        try storage.append(workload.batch(2))
        try storage.close()
        try FileManager.default.removeItem(atPath: dir.file("MANIFEST"))
        XCTAssertThrowsError(try Storage.open(directory: dir.path, logger: logs.logger)) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .corrupt)
            XCTAssertEqual((error as? StorageError)?.file, dir.file("MANIFEST"))
        }
        let report = try StorageChecker.repair(directory: dir.path)
        XCTAssertTrue(report.isOK, report.description)
        XCTAssertEqual(report.snapshotRev, 5)
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 7)
        XCTAssertEqual(recovered.root, workload.database.root)
    }

    func testRepairRefusesADamagedSnapshot() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 25)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(workload.batch(5))
        storage.compact(root: workload.database.root, rev: 5)
        try storage.close()
        let snapshot = try XCTUnwrap(dir.snapshots().first)
        var bytes = dir.read(snapshot)
        bytes[45] ^= 0x01
        dir.write(snapshot, bytes)
        XCTAssertEqual(StorageChecker.check(directory: dir.path).problem?.file, dir.file(snapshot))
        XCTAssertThrowsError(try StorageChecker.repair(directory: dir.path)) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .corrupt)
            XCTAssertTrue("\(error)".contains("cannot be repaired"), "\(error)")
        }
        XCTAssertEqual(dir.read(snapshot), bytes)
    }

    func testCheckReportsATornTailAsRecoverable() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 26)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        for _ in 0..<3 { try storage.append(workload.batch(1)) }
        try storage.close()
        let segment = try XCTUnwrap(dir.segments().last)
        let bytes = dir.log(segment)
        dir.write(segment, Array(bytes.dropLast(3)))
        let report = StorageChecker.check(directory: dir.path)
        XCTAssertEqual(report.problem?.isTornTail, true)
        XCTAssertEqual(report.rev, 2)
        XCTAssertTrue(report.description.contains("cut short by a crash"), report.description)
    }
}

extension TestDirectory {
    static func contents(_ path: String) -> [UInt8] {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { [UInt8]($0) } ?? []
    }

    static func names(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}
