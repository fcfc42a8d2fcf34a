import HearthCore
import HearthStorage
import XCTest

/// Appending records with payloads encoded before (a leader encodes each record once for its log
/// and its replication stream; a replica logs its leader's bytes).
final class EncodedAppendTests: XCTestCase {
    let logs = LogCapture()

    func testPreEncodedRecordsAreLoggedByteForByteAsEncodedOnes() throws {
        try compareWithPlainAppends(seed: 7, batches: 5, of: 4) { storage, index, batch in
            // Records encoded one by one, and a batch's records encoded into one shared buffer.
            let records = index % 2 == 0 ? batch.map(EncodedRecord.init) : EncodedRecord.encoding(batch) { _ in nil }
            try storage.append(records) {}
        }
    }

    func testRecordsEncodedIntoTheLogsBufferAreLoggedAsPlainOnesAndReturnEachPayload() throws {
        try compareWithPlainAppends(seed: 13, batches: 6, of: 5) { storage, _, batch in
            let separately = batch.map { EncodedRecord($0).payload }
            // Every other record came with its payload (a replica's), the others are encoded.
            let given = { (index: Int) -> ArraySlice<UInt8>? in index % 2 == 1 ? separately[index] : nil }
            var seenBeforeSync: [EncodedRecord] = []
            let records = try storage.appendEncoding(batch, received: given) { seenBeforeSync = $0 }
            XCTAssertEqual(records.map { Array($0.payload) }, separately.map(Array.init))
            XCTAssertEqual(records.map(\.writeRev), batch.map(\.writeRev))
            XCTAssertEqual(seenBeforeSync.map { Array($0.payload) }, separately.map(Array.init))
        }
    }

    /// Appends `count` batches of `size` random writes with `append` to one new data directory
    /// (given the batch's index) and plainly to another: the two logs must be the same byte for
    /// byte, and the one `append` wrote must recover every write.
    private func compareWithPlainAppends(
        seed: UInt64, batches count: Int, of size: Int, _ append: (Storage, Int, [LogRecord]) throws -> Void
    ) throws {
        let plain = TestDirectory()
        let encoded = TestDirectory()
        defer {
            plain.remove()
            encoded.remove()
        }
        var workload = Workload(seed: seed)
        let batches = (0..<count).map { _ in workload.batch(size).map(LogRecord.write) }
        let first = try Storage.open(directory: plain.path, logger: logs.logger).storage
        let second = try Storage.open(directory: encoded.path, logger: logs.logger).storage
        for (index, batch) in batches.enumerated() {
            try first.append(batch)
            try append(second, index, batch)
        }
        try first.close()
        try second.close()
        let segment = try XCTUnwrap(plain.segments().last)
        XCTAssertTrue(plain.read(segment) == encoded.read(segment), "one batch after the other, byte for byte")
        let (reopened, recovered) = try Storage.open(directory: encoded.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, UInt64(count * size))
        XCTAssertEqual(recovered.root, workload.database.root)
    }

    func testABatchEncodedIntoOneBufferHasEachRecordsOwnPayload() {
        var workload = Workload(seed: 5)
        let batch = workload.batch(9).map(LogRecord.write)
        let separately = batch.map { Array(EncodedRecord($0).payload) }
        // Every third record came with its payload (a replica's): it is kept as given.
        let given = { (index: Int) -> ArraySlice<UInt8>? in index % 3 == 1 ? Array("given \(index)".utf8)[...] : nil }
        let shared = EncodedRecord.encoding(batch, received: given)
        XCTAssertEqual(shared.count, batch.count)
        for index in batch.indices {
            let payload = given(index).map(Array.init) ?? separately[index]
            XCTAssertEqual(Array(shared[index].payload), payload, "record \(index)")
            XCTAssertEqual(shared[index].writeRev, batch[index].writeRev)
        }
        XCTAssertTrue(EncodedRecord.encoding([]) { _ in nil }.isEmpty)
    }

    func testBeforeSyncRunsOnceTheBatchIsWrittenAndBeforeItsFsync() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let plan = FaultPlan()
        var workload = Workload(seed: 11)
        let storage = try Storage.open(
            directory: dir.path, fileSystem: FaultyFileSystem(plan: plan), logger: logs.logger
        ).storage
        try storage.append(workload.batch(2))
        let segment = try XCTUnwrap(dir.segments().last)
        let before = dir.logEnd(segment)

        var sizeSeen: Int?
        try storage.append(workload.batch(3).map { EncodedRecord(.write($0)) }) { sizeSeen = dir.logEnd(segment) }
        XCTAssertGreaterThan(try XCTUnwrap(sizeSeen), before, "the batch is written when beforeSync runs")

        // The fsync comes after: when it fails, beforeSync has run and the batch is cut away.
        let size = dir.logEnd(segment)
        plan.failNth(.fsync, 1)
        var called = false
        XCTAssertThrowsError(try storage.append(workload.batch(1).map { EncodedRecord(.write($0)) }) { called = true })
        XCTAssertTrue(called)
        XCTAssertEqual(plan.failures, [.fsync])
        XCTAssertEqual(dir.logEnd(segment), size)
        plan.disarm()
        try? storage.close()
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 5)
    }
}
