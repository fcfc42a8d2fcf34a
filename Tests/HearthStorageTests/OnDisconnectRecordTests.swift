import Foundation
import HearthCore
import HearthJSON
import HearthStorage
import Logging
import XCTest

/// onDisconnect registrations in the log (docs/STORAGE.md "onDisconnect records"): they take no
/// revision, share their batch's fate, survive reopening and compaction, and `hearth check`
/// understands them.
final class OnDisconnectRecordTests: XCTestCase {
    let logs = LogCapture()

    private func open(_ dir: TestDirectory) throws -> Storage {
        try Storage.open(directory: dir.path, logger: logs.logger).storage
    }

    func testRegistrationsSurviveReopenAndTakeNoRevision() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var writes = Workload(seed: 21)
        var registrations = RegistrationWorkload(seed: 22)
        var storage = try open(dir)
        for round in 0..<40 {
            var batch: [LogRecord] = []
            for index in 0..<(1 + round % 4) {
                if (round + index) % 3 != 0 { batch.append(.write(writes.next())) }
                batch.append(.onDisconnect(registrations.next()))
            }
            try storage.append(batch)
            XCTAssertEqual(storage.lastRev, writes.database.rev, "round \(round): registrations take no rev")
            XCTAssertEqual(storage.onDisconnect.entries, registrations.live, "round \(round)")
            if round % 13 == 12 {
                try storage.close()
                storage = try open(dir)
                XCTAssertEqual(storage.onDisconnect.entries, registrations.live, "reopened after round \(round)")
            }
        }
        // A batch of registrations alone is fine too.
        try storage.append([.onDisconnect(registrations.next())])
        try storage.close()
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        defer { try? reopened.close() }
        XCTAssertEqual(recovered.rev, writes.database.rev)
        XCTAssertEqual(recovered.root, writes.database.root)
        XCTAssertFalse(registrations.live.isEmpty)
        XCTAssertEqual(reopened.onDisconnect.entries, registrations.live)
        XCTAssertEqual(reopened.onDisconnect.nextID, registrations.nextID, "ids are never reused")
        XCTAssertTrue(logs.entries(atLeast: .warning).isEmpty, "\(logs.entries(atLeast: .warning))")
    }

    func testAppendRejectsWritesOutOfOrderAmongRegistrations() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try open(dir)
        defer { try? storage.close() }
        var writes = Workload(seed: 23)
        var registrations = RegistrationWorkload(seed: 24)
        let batch = writes.batch(2)
        XCTAssertThrowsError(
            try storage.append([.write(batch[0]), .onDisconnect(registrations.next()), .write(batch[0])])
        ) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .invalidArgument)
        }
        XCTAssertTrue(storage.onDisconnect.isEmpty, "nothing of a refused batch is taken")
        XCTAssertEqual(storage.lastRev, 0)
    }

    /// The snapshot keeps the live registrations; the records of those that ran or were
    /// cancelled go with the old segments.
    func testCompactionKeepsOnlyTheLiveRegistrations() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var writes = Workload(seed: 25)
        var registrations = RegistrationWorkload(seed: 26)
        let storage = try open(dir)
        for round in 0..<60 {
            try storage.append([.write(writes.next()), .onDisconnect(registrations.next())])
            if round == 20 || round == 45 {
                storage.waitForCompaction()
                storage.compact(root: writes.database.root, rev: writes.database.rev)
            }
        }
        storage.waitForCompaction()
        XCTAssertEqual(storage.compactionCounts.completed, 2)
        try storage.close()
        XCTAssertEqual(dir.segments(), ["wal-00000000000000000047.log"])
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        XCTAssertEqual(recovered.root, writes.database.root)
        XCTAssertEqual(reopened.onDisconnect.entries, registrations.live)

        // Every connection ends: its queue runs. A compaction then leaves no registration at all.
        var removals: [LogRecord] = []
        for queue in registrations.queues.values where !queue.isEmpty { removals.append(.onDisconnect(queue.removal)) }
        XCTAssertFalse(removals.isEmpty)
        try reopened.append(removals + [.write(writes.next())])
        XCTAssertTrue(reopened.onDisconnect.isEmpty)
        reopened.compact(root: writes.database.root, rev: writes.database.rev)
        reopened.waitForCompaction()
        try reopened.close()
        XCTAssertEqual(dir.segments().count, 1)
        XCTAssertEqual(dir.read(try XCTUnwrap(dir.segments().first)).count, 16, "a new segment: only its header")
        let again = try open(dir)
        defer { try? again.close() }
        XCTAssertTrue(again.onDisconnect.isEmpty)
        XCTAssertEqual(again.onDisconnect.nextID, registrations.nextID)
    }

    /// A batch holding writes and registrations is recovered whole or not at all.
    func testTornBatchDropsItsRegistrationsWithItsWrites() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var writes = Workload(seed: 27)
        var registrations = RegistrationWorkload(seed: 28)
        let storage = try open(dir)
        for _ in 0..<3 { try storage.append([.onDisconnect(registrations.next()), .write(writes.next())]) }
        let before = (writes.database, registrations.live)
        let segment = try XCTUnwrap(dir.segments().last)
        let goodEnd = dir.logEnd(segment)
        try storage.append([
            .write(writes.next()), .onDisconnect(registrations.next()), .onDisconnect(registrations.next()),
        ])
        try storage.close()
        let full = dir.log(segment)
        for cut in stride(from: goodEnd, to: full.count, by: 7) {
            dir.write(segment, Array(full[..<cut]))
            let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
            try reopened.close()
            XCTAssertEqual(recovered.rev, before.0.rev, "cut at \(cut)")
            XCTAssertEqual(reopened.onDisconnect.entries, before.1, "cut at \(cut)")
        }
    }

    /// Directories written before registrations were logged (snapshot version 1) still open.
    func testVersionOneSnapshotsStillLoad() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var writes = Workload(seed: 29)
        let storage = try open(dir)
        try storage.append(writes.batch(5))
        storage.compact(root: writes.database.root, rev: 5)
        storage.waitForCompaction()
        try storage.append(writes.batch(3))
        try storage.close()
        let name = try XCTUnwrap(dir.snapshots().last)
        var file = dir.read(name)
        XCTAssertEqual(file[4], 3, "snapshots are written as version 3")
        // Version 1: the same header and tree, no onDisconnect section.
        let treeEnd = 40 + Int(file[24..<32].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        file.removeSubrange(treeEnd...)
        file[4] = 1
        let crc = TestCRC32.checksum(file[0..<36])
        for i in 0..<4 { file[36 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        dir.write(name, file)
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        defer { try? reopened.close() }
        XCTAssertEqual(recovered.rev, 8)
        XCTAssertEqual(recovered.root, writes.database.root)
        XCTAssertTrue(reopened.onDisconnect.isEmpty)
    }

    func testCheckCountsPendingRegistrationsAndLocatesADamagedOne() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var writes = Workload(seed: 30)
        var registrations = RegistrationWorkload(seed: 31)
        let storage = try open(dir)
        try storage.append([.write(writes.next())])
        let segment = try XCTUnwrap(dir.segments().last)
        let recordStart = dir.logEnd(segment)
        try storage.append([.onDisconnect(registrations.next()), .write(writes.next())])
        try storage.append([.onDisconnect(registrations.next())])
        try storage.close()
        let report = StorageChecker.check(directory: dir.path)
        XCTAssertTrue(report.isOK, report.description)
        XCTAssertEqual(report.pendingOnDisconnect, registrations.live.count)
        XCTAssertTrue(report.description.contains("onDisconnect operation"), report.description)

        // A flipped byte in the payload of the registration (not at the end of the log).
        var bytes = dir.read(segment)
        bytes[recordStart + 30] ^= 0x20
        dir.write(segment, bytes)
        let damaged = StorageChecker.check(directory: dir.path)
        XCTAssertEqual(damaged.problem?.offset, Int64(recordStart), damaged.description)
        XCTAssertEqual(damaged.problem?.isTornTail, false)
        XCTAssertEqual(damaged.rev, 1)
        XCTAssertThrowsError(try Storage.open(directory: dir.path, logger: logs.logger)) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .corrupt)
        }
    }
}

/// CRC-32 (IEEE), to rewrite headers in tests.
enum TestCRC32 {
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
