import HearthCore
import HearthStorage
import Logging
import XCTest

/// Under `fsync: always` a segment is zero-filled ahead of its records (docs/STORAGE.md
/// "Preallocation"): the zeros read as the log's end, and a write cut short inside them (whole
/// sectors left as zeros, in any order) as a torn batch, never as acknowledged data.
final class PreallocationTests: XCTestCase {
    let logs = LogCapture()
    /// A small step, so that batches cross it.
    let options = StorageOptions(walPreallocationBytes: 4096)

    func open(_ dir: TestDirectory) throws -> (Storage, Node, UInt64) {
        let opened = try Storage.open(directory: dir.path, options: options, logger: logs.logger)
        return (opened.storage, opened.recovered.root, opened.recovered.rev)
    }

    /// Opens `dir` on a file system that fails per `plan`.
    private func openFaulty(_ dir: TestDirectory, _ plan: FaultPlan) throws -> Storage {
        try Storage.open(
            directory: dir.path, options: options, fileSystem: FaultyFileSystem(plan: plan), logger: logs.logger
        ).storage
    }

    /// Opens `dir`, which must recover exactly `expected` and check clean.
    private func assertRecovers(
        _ dir: TestDirectory, to expected: Database, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let (storage, root, rev) = try open(dir)
        try storage.close()
        XCTAssertEqual(rev, expected.rev, file: file, line: line)
        XCTAssertEqual(root, expected.root, file: file, line: line)
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK, file: file, line: line)
    }

    func testRecordsGoIntoZerosWrittenAheadAndTheZerosEndTheLog() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 61)
        let (storage, _, _) = try open(dir)
        let segment = try XCTUnwrap(dir.segments().last)
        for step in 0..<30 {
            try storage.append(workload.batch(1 + step % 7))
            let file = dir.read(segment)
            let end = dir.logEnd(segment)
            XCTAssertEqual(file.count % 4096, 0, "the file grows a step at a time")
            XCTAssertGreaterThan(file.count, end, "room is left after every batch")
            XCTAssertTrue(file[end...].allSatisfy { $0 == 0 })
        }
        XCTAssertGreaterThan(dir.read(segment).count, 4096, "the batches crossed a step")
        try storage.close()
        let size = dir.read(segment).count

        // Reopened, the log ends at its last record (no warning) and goes on from there.
        logs.clear()
        let (reopened, root, rev) = try open(dir)
        XCTAssertEqual(rev, workload.database.rev)
        XCTAssertEqual(root, workload.database.root)
        XCTAssertTrue(logs.entries(atLeast: .warning).isEmpty)
        XCTAssertEqual(dir.read(segment).count, size, "the room is kept")
        try reopened.append(workload.batch(2))
        try reopened.close()
        try assertRecovers(dir, to: workload.database)
    }

    func testOtherPoliciesAppendWithoutPreallocating() throws {
        for policy in [FsyncPolicy.never, .everysec] {
            let dir = TestDirectory()
            defer { dir.remove() }
            var workload = Workload(seed: 62)
            var options = self.options
            options.fsync = policy
            let storage = try Storage.open(directory: dir.path, options: options, logger: logs.logger).storage
            try storage.append(workload.batch(3))
            try storage.close()
            let segment = try XCTUnwrap(dir.segments().last)
            XCTAssertEqual(dir.read(segment).count, dir.logEnd(segment), "\(policy)")
        }
    }

    /// The last batch written into the room is cut short at every byte: the bytes after the cut
    /// stay zeros, as a crash leaves them. Each cut recovers the state before the batch; only the
    /// cut at the batch's start is no damage at all.
    func testABatchCutShortInsideTheRoomIsTornAtEveryByteOffset() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 63)
        let (storage, _, _) = try open(dir)
        for _ in 0..<3 { try storage.append(workload.batch(2)) }
        let before = workload.database
        let segment = try XCTUnwrap(dir.segments().last)
        let goodEnd = dir.logEnd(segment)
        try storage.append(workload.batch(3))
        try storage.close()
        let full = dir.read(segment)
        let batchEnd = dir.logEnd(segment)
        XCTAssertGreaterThan(full.count, batchEnd)

        for cut in goodEnd..<batchEnd {
            dir.write(segment, Array(full[..<cut]) + [UInt8](repeating: 0, count: full.count - cut))
            logs.clear()
            let (reopened, root, rev) = try open(dir)
            try reopened.close()
            XCTAssertEqual(rev, before.rev, "cut at \(cut)")
            XCTAssertEqual(root, before.root, "cut at \(cut)")
            let warnings = logs.entries(atLeast: .warning)
            if cut == goodEnd {
                XCTAssertTrue(warnings.isEmpty, "cut at \(cut)")
            } else {
                XCTAssertEqual(warnings.count, 1, "cut at \(cut)")
                XCTAssertTrue(warnings.first?.message.contains("torn") ?? false, "cut at \(cut)")
                XCTAssertEqual(warnings.first?.metadata["truncatedTo"], "\(goodEnd)", "cut at \(cut)")
                XCTAssertEqual(dir.read(segment).count, goodEnd, "cut at \(cut)")
            }
        }
    }

    /// A crash may write some sectors of the last batch and not others, in any order. Each sector
    /// of a batch of several left as zeros (the others written) makes the batch torn — small
    /// records, and records larger than a sector — while a flipped bit in the same place is
    /// corruption, refused.
    func testAnUnwrittenSectorInTheLastBatchIsTornAndAFlippedBitIsNot() throws {
        try checkUnwrittenSectors { workload in workload.batch(80) }
        try checkUnwrittenSectors { workload in
            let rev = workload.database.rev
            return (1...3).map { index in
                let path = (try? Path.parse("/large/\(index)")) ?? .root
                return CommittedWrite(
                    rev: rev + UInt64(index),
                    overwrites: [(path, .leaf(.string(String(repeating: "v", count: 1500))))])
            }
        }
    }

    private func checkUnwrittenSectors(
        lastBatch: (inout Workload) -> [CommittedWrite], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 64)
        let (storage, _, _) = try open(dir)
        try storage.append(workload.batch(2))
        let before = workload.database
        let segment = try XCTUnwrap(dir.segments().last)
        let goodEnd = dir.logEnd(segment)
        try storage.append(lastBatch(&workload))
        try storage.close()
        let full = dir.read(segment)
        let batchEnd = dir.logEnd(segment)
        let sectors = Array(stride(from: goodEnd / 512 * 512, to: batchEnd, by: 512))
        XCTAssertGreaterThanOrEqual(sectors.count, 4, file: file, line: line)

        for sector in sectors {
            let lost = max(sector, goodEnd)..<min(sector + 512, batchEnd)
            var damaged = full
            damaged.replaceSubrange(lost, with: [UInt8](repeating: 0, count: lost.count))
            dir.write(segment, damaged)
            logs.clear()
            let (reopened, root, rev) = try open(dir)
            try reopened.close()
            XCTAssertEqual(rev, before.rev, "sector at \(sector)", file: file, line: line)
            XCTAssertEqual(root, before.root, "sector at \(sector)", file: file, line: line)
            XCTAssertEqual(logs.entries(atLeast: .warning).count, 1, "sector at \(sector)", file: file, line: line)
            XCTAssertEqual(dir.read(segment).count, goodEnd, "sector at \(sector)", file: file, line: line)
        }

        var flipped = full
        flipped[(goodEnd + batchEnd) / 2] ^= 0x04
        dir.write(segment, flipped)
        XCTAssertThrowsError(try open(dir), file: file, line: line) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .corrupt, file: file, line: line)
        }
        XCTAssertEqual(StorageChecker.check(directory: dir.path).problem?.isTornTail, false, file: file, line: line)
    }

    /// A segment written to no more loses its room when a new one starts; when cutting it fails,
    /// its zeros still read as its end.
    func testASegmentLeftBehindIsTrimmedOrReadToItsLastRecord() throws {
        for trimFails in [false, true] {
            let dir = TestDirectory()
            defer { dir.remove() }
            var workload = Workload(seed: 65)
            let plan = FaultPlan()
            let storage = try openFaulty(dir, plan)
            try storage.append(workload.batch(3))
            let first = try XCTUnwrap(dir.segments().first)
            let firstEnd = dir.logEnd(first)
            // The snapshot's rename fails, so the first segment stays beside the new one.
            plan.failNth(.rename, 2)
            if trimFails { plan.failAlways(.truncate) }
            storage.compact(root: workload.database.root, rev: workload.database.rev)
            storage.waitForCompaction()
            plan.disarm()
            try storage.append(workload.batch(2))
            try storage.close()
            XCTAssertEqual(dir.segments().count, 2)
            XCTAssertEqual(dir.read(first).count, trimFails ? 4096 : firstEnd, "trim fails: \(trimFails)")

            try assertRecovers(dir, to: workload.database)
        }
    }

    /// The zeros are a speed-up: when their write fails (a full disk; the failing write first
    /// writes half its zeros), the batch is appended without them, with a warning, and the log
    /// recovers every write. When their fsync fails, the storage fails like a failed append:
    /// nothing of the batch is acknowledged, and the log recovers to the batch before.
    func testAFailedZeroFillAppendsWithoutAndAFailedFsyncFailsTheBatch() throws {
        for operation in [FaultPlan.Operation.write, .fsync] {
            let dir = TestDirectory()
            defer { dir.remove() }
            var workload = Workload(seed: 66)
            let plan = FaultPlan()
            let storage = try openFaulty(dir, plan)
            // Fill the first step of room, so that the next batch needs more.
            let segment = try XCTUnwrap(dir.segments().last)
            while dir.read(segment).count - dir.logEnd(segment) > 300 {
                try storage.append(workload.batch(1))
            }
            let before = workload.database
            logs.clear()
            plan.failNth(operation, 1)
            // 40 records' headers alone take more room than is left.
            let batch = workload.batch(40)
            if operation == .write {
                try storage.append(batch)
                XCTAssertEqual(plan.failures, [.write], "the zeros' write failed, the batch's did not")
                XCTAssertEqual(logs.entries(atLeast: .warning).count, 1)
                XCTAssertNil(storage.failureError)
                try storage.append(workload.batch(40))
                XCTAssertEqual(logs.entries(atLeast: .warning).count, 1, "the segment goes on appending")
                plan.disarm()
                try storage.close()
                try assertRecovers(dir, to: workload.database)
            } else {
                XCTAssertThrowsError(try storage.append(batch)) { error in
                    XCTAssertEqual((error as? StorageError)?.operation, "fsync")
                }
                plan.disarm()
                XCTAssertNotNil(storage.failureError)
                try? storage.close()
                try assertRecovers(dir, to: before)
            }
        }
    }
}
