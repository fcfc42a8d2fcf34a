import HearthCore
import HearthJSON
import HearthStorage
import Logging
import XCTest

final class RecoveryTests: XCTestCase {
    let logs = LogCapture()

    func open(_ dir: TestDirectory, _ options: StorageOptions = StorageOptions()) throws -> (Storage, Node, UInt64) {
        let opened = try Storage.open(directory: dir.path, options: options, logger: logs.logger)
        return (opened.storage, opened.recovered.root, opened.recovered.rev)
    }

    func testNewDirectoryStartsEmptyAndHoldsItsFiles() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let (storage, root, rev) = try open(dir)
        XCTAssertEqual(root, .empty)
        XCTAssertEqual(rev, 0)
        try storage.close()
        XCTAssertEqual(dir.names(), ["LOCK", "MANIFEST", "wal-00000000000000000001.log"])
        XCTAssertEqual(
            String(decoding: dir.read("MANIFEST"), as: UTF8.self), "{\"format\":1,\"snapshot\":null,\"rev\":0}\n")
    }

    func testAppendedWritesSurviveReopen() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 1)
        for policy in FsyncPolicy.allCases {
            let (storage, _, rev) = try open(dir, StorageOptions(fsync: policy))
            XCTAssertEqual(rev, workload.database.rev)
            for size in [1, 3, 7, 1, 20] { try storage.append(workload.batch(size)) }
            try storage.syncIfDue()
            try storage.close()
        }
        let (storage, root, rev) = try open(dir)
        defer { try? storage.close() }
        XCTAssertEqual(rev, workload.database.rev)
        XCTAssertEqual(root, workload.database.root)
        XCTAssertTrue(logs.entries(atLeast: .warning).isEmpty, "\(logs.entries(atLeast: .warning))")
    }

    func testAppendRejectsRevisionsOutOfOrderWithoutFailing() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let (storage, _, _) = try open(dir)
        defer { try? storage.close() }
        var workload = Workload(seed: 2)
        let first = workload.batch(2)
        XCTAssertThrowsError(try storage.append([first[1]])) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .invalidArgument)
        }
        try storage.append(first)
        XCTAssertEqual(storage.lastRev, 2)
    }

    func testSnapshotPlusLogEqualsLogAlone() throws {
        let plain = TestDirectory("plain")
        let compacted = TestDirectory("compacted")
        defer {
            plain.remove()
            compacted.remove()
        }
        var workload = Workload(seed: 3)
        let (a, _, _) = try open(plain)
        let (b, _, _) = try open(compacted)
        for round in 0..<30 {
            let batch = workload.batch(1 + round % 4)
            try a.append(batch)
            try b.append(batch)
            if round == 10 || round == 20 {
                // A compaction asked for while one runs is skipped: let the first one finish.
                b.waitForCompaction()
                b.compact(root: workload.database.root, rev: workload.database.rev)
                // Writes go on while the snapshot is written.
            }
            if round == 25 { b.waitForCompaction() }
        }
        try a.close()
        try b.close()
        XCTAssertEqual(b.compactionCounts.completed, 2)
        XCTAssertEqual(compacted.snapshots().count, 1)
        XCTAssertEqual(compacted.segments().count, 1)
        XCTAssertEqual(plain.snapshots().count, 0)

        let (ra, rootA, revA) = try open(plain)
        let (rb, rootB, revB) = try open(compacted)
        try ra.close()
        try rb.close()
        XCTAssertEqual(revA, workload.database.rev)
        XCTAssertEqual(revB, revA)
        XCTAssertEqual(rootA, workload.database.root)
        XCTAssertEqual(rootB, rootA)
    }

    /// The last batch holds three records; cutting the file anywhere inside it drops the whole
    /// batch (it was never acknowledged) and keeps everything before it.
    func testTornLastBatchIsTruncatedAtEveryByteOffset() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 4)
        let (storage, _, _) = try open(dir)
        for _ in 0..<4 { try storage.append(workload.batch(2)) }
        let before = workload.database
        let segment = try XCTUnwrap(dir.segments().last)
        let goodEnd = dir.logEnd(segment)
        try storage.append(workload.batch(3))
        try storage.close()
        let full = dir.log(segment)
        XCTAssertGreaterThan(full.count, goodEnd + 60)

        for cut in goodEnd..<full.count {
            dir.write(segment, Array(full[..<cut]))
            logs.clear()
            let (reopened, root, rev) = try open(dir)
            try reopened.close()
            XCTAssertEqual(rev, before.rev, "cut at \(cut)")
            XCTAssertEqual(root, before.root, "cut at \(cut)")
            XCTAssertEqual(dir.logEnd(segment), goodEnd, "cut at \(cut)")
            let warnings = logs.entries(atLeast: .warning)
            if cut == goodEnd {
                XCTAssertTrue(warnings.isEmpty)
            } else {
                XCTAssertEqual(warnings.count, 1, "cut at \(cut)")
                XCTAssertEqual(warnings.first?.level, .warning)
                XCTAssertTrue(warnings.first?.message.contains("torn") ?? false)
                XCTAssertEqual(warnings.first?.metadata["truncatedTo"], "\(goodEnd)")
            }
        }
        // After a truncation the log continues where it was cut.
        dir.write(segment, Array(full[..<(full.count - 1)]))
        let (reopened, _, _) = try open(dir)
        var replay = Workload(seed: 4)
        _ = replay.batch(8)
        let last = replay.batch(3)
        try reopened.append(last)
        try reopened.close()
        let (final, root, rev) = try open(dir)
        try final.close()
        XCTAssertEqual(rev, replay.database.rev)
        XCTAssertEqual(root, replay.database.root)
    }

    func testZeroFilledOrChecksumFailingTailIsTorn() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 5)
        let (storage, _, _) = try open(dir)
        try storage.append(workload.batch(3))
        let before = workload.database
        let segment = try XCTUnwrap(dir.segments().last)
        let goodEnd = dir.logEnd(segment)
        try storage.append(workload.batch(1))
        try storage.close()
        let full = dir.log(segment)

        // The file grew but the record's blocks were never written.
        dir.write(segment, Array(full[..<goodEnd]) + [UInt8](repeating: 0, count: 4096))
        var (reopened, root, rev) = try open(dir)
        try reopened.close()
        XCTAssertEqual(rev, before.rev)
        XCTAssertEqual(root, before.root)

        // The last record is complete but one of its payload bytes is wrong.
        var damaged = full
        damaged[full.count - 2] ^= 0x55
        dir.write(segment, damaged)
        (reopened, root, rev) = try open(dir)
        try reopened.close()
        XCTAssertEqual(rev, before.rev)
        XCTAssertEqual(dir.logEnd(segment), goodEnd)
    }

    func testCorruptionInTheMiddleIsRefusedWithFileAndOffset() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 6)
        let (storage, _, _) = try open(dir)
        try storage.append(workload.batch(2))
        let segment = try XCTUnwrap(dir.segments().last)
        let secondBatch = dir.logEnd(segment)
        try storage.append(workload.batch(2))
        try storage.append(workload.batch(2))
        try storage.close()
        let full = dir.read(segment)

        for (damagedOffset, what) in [(secondBatch + 30, "payload"), (secondBatch + 1, "length")] {
            var damaged = full
            damaged[damagedOffset] ^= 0x01
            dir.write(segment, damaged)
            XCTAssertThrowsError(try open(dir), what) { error in
                guard let error = error as? StorageError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.kind, .corrupt)
                XCTAssertEqual(error.file, dir.file(segment))
                XCTAssertEqual(error.offset, Int64(secondBatch))
                XCTAssertTrue(error.message.contains(dir.file(segment)), error.message)
                XCTAssertTrue(error.message.contains("byte offset \(secondBatch)"), error.message)
                XCTAssertTrue(error.message.contains("hearth check --repair \(dir.path)"), error.message)
            }
            // Nothing was changed, and the lock was released.
            XCTAssertEqual(dir.read(segment), damaged)
        }
        dir.write(segment, full)
        let (reopened, root, _) = try open(dir)
        try reopened.close()
        XCTAssertEqual(root, workload.database.root)
    }

    func testDamagedSnapshotIsRefused() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 7)
        let (storage, _, _) = try open(dir)
        try storage.append(workload.batch(10))
        storage.compact(root: workload.database.root, rev: workload.database.rev)
        try storage.close()
        let snapshot = try XCTUnwrap(dir.snapshots().first)
        var bytes = dir.read(snapshot)
        bytes[bytes.count / 2] ^= 0xFF
        dir.write(snapshot, bytes)
        XCTAssertThrowsError(try open(dir)) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .corrupt)
            XCTAssertEqual((error as? StorageError)?.file, dir.file(snapshot))
            XCTAssertEqual((error as? StorageError)?.offset, 40)
        }
    }

    func testSecondOpenOfALockedDirectoryFails() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let (storage, _, _) = try open(dir)
        XCTAssertThrowsError(try open(dir)) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .locked)
            XCTAssertTrue("\(error)".contains("in use by another process"), "\(error)")
        }
        XCTAssertThrowsError(try StorageChecker.repair(directory: dir.path)) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .locked)
        }
        try storage.close()
        let (again, _, _) = try open(dir)
        try again.close()
    }

    func testEmptyRootAndPriorityOnlyWritesRoundTrip() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var database = Database()
        let (storage, _, _) = try open(dir)
        let writes: [(String, String)] = [
            ("/", #"{"a":{"b":1,".priority":"x"},"c":"é"}"#), ("/a/.priority", "2.5"), ("/", "null"),
            ("/z", #"{".value":true,".priority":-1}"#), ("/n", "-0.000001"),
        ]
        for (pathText, json) in writes {
            let path = try Path.parse(pathText, allowPriority: true)
            let value = try PreparedValue(try JSONParser.parse(json), at: path, limits: .default)
            guard case .committed(let logged, _) = database.apply(.set(path: path, value: value), now: 0) else {
                return XCTFail("stale")
            }
            try storage.append([logged])
        }
        storage.compact(root: database.root, rev: database.rev)
        try storage.close()
        let (reopened, root, rev) = try open(dir)
        try reopened.close()
        XCTAssertEqual(rev, 5)
        XCTAssertEqual(root, database.root)
        XCTAssertEqual(root.child(at: try Path.parse("/z")).priority, .number(.int(-1)))
    }
}
