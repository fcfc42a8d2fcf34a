import Foundation
import HearthCore
import HearthStorage
import XCTest

/// Appends that leave their fsync to the storage's sync thread (`append(_:deferringSync:)`):
/// the engine writes the next batch while the last is fsynced; a batch counts as durable only
/// once `durableRev` has it, and a failed fsync cuts the log back to what was durable.
final class DeferredSyncTests: XCTestCase {
    let logs = LogCapture()

    /// A storage over `dir` on the real disk with `plan`'s faults and held fsyncs, with no
    /// zero-filled room: every fsync the tests count is a batch's.
    private func openStorage(_ dir: TestDirectory, _ plan: FaultPlan) throws -> Storage {
        var options = StorageOptions.default
        options.walPreallocationBytes = 0
        return try Storage.open(
            directory: dir.path, options: options, fileSystem: FaultyFileSystem(plan: plan), logger: logs.logger
        ).storage
    }

    func testAppendReturnsBeforeItsFsyncAndTheBatchIsDurableOnceItEnds() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let disk = FaultPlan()
        let storage = try openStorage(dir, disk)
        let heard = Locked<[UInt64]>([])
        storage.durabilityObserver = { rev in heard.withLock { $0.append(rev) } }
        var workload = Workload(seed: 3)

        disk.holdFsyncs()
        try storage.append(workload.batch(3).map(LogRecord.write), deferringSync: true)
        // The first fsync is held: the storage takes the next batch meanwhile.
        try storage.append(workload.batch(2).map(LogRecord.write), deferringSync: true)
        XCTAssertEqual(storage.lastRev, 5)
        XCTAssertEqual(storage.durableRev, 0, "nothing is durable while the fsync is held")
        XCTAssertEqual(heard.withLock { $0 }, [])

        disk.releaseFsyncs()
        storage.waitForDeferredSync()
        XCTAssertEqual(storage.durableRev, 5)
        XCTAssertEqual(heard.withLock { $0.last }, 5)
        XCTAssertEqual(heard.withLock { $0 }, heard.withLock { $0 }.sorted(), "revisions are heard in order")
        XCTAssertNil(storage.adoptSyncFailure())
        try storage.close()

        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 5)
        XCTAssertEqual(recovered.root, workload.database.root)
    }

    func testAFailedDeferredFsyncCutsTheLogBackToTheLastDurableBatch() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let plan = FaultPlan()
        let storage = try openStorage(dir, plan)
        let failures = Locked(0)
        storage.failureObserver = { _ in failures.withLock { $0 += 1 } }
        var workload = Workload(seed: 9)
        plan.failNth(.fsync, 2)

        try storage.append(workload.batch(4).map(LogRecord.write), deferringSync: true)
        storage.waitForDeferredSync()
        let durableRoot = workload.database.root
        XCTAssertEqual(storage.durableRev, 4)
        try storage.append(workload.batch(3).map(LogRecord.write), deferringSync: true)
        storage.waitForDeferredSync()

        XCTAssertEqual(plan.failures, [.fsync])
        XCTAssertEqual(failures.withLock { $0 }, 1)
        XCTAssertNotNil(storage.adoptSyncFailure())
        XCTAssertEqual(storage.durableRev, 4)
        XCTAssertEqual(storage.lastRev, 4, "the storage goes back to the last durable batch")
        XCTAssertThrowsError(try storage.append(workload.batch(1).map(LogRecord.write), deferringSync: true)) {
            XCTAssertEqual(($0 as? StorageError)?.kind, .failed)
        }
        plan.disarm()
        try? storage.close()

        // The batch whose fsync failed was cut from the log: a restart does not bring it back.
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 4)
        XCTAssertEqual(recovered.root, durableRoot)
    }

    func testAnFsyncOfTheEngineCoversTheDeferredOnes() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let disk = FaultPlan()
        let storage = try openStorage(dir, disk)
        var workload = Workload(seed: 4)
        disk.holdFsyncs()
        try storage.append(workload.batch(2).map(LogRecord.write), deferringSync: true)
        disk.releaseFsyncs()
        // A batch appended the usual way (a replica's) is durable when `append` returns, and so is
        // everything before it.
        try storage.append(workload.batch(2).map(LogRecord.write))
        XCTAssertEqual(storage.durableRev, 4)
        storage.waitForDeferredSync()
        XCTAssertEqual(storage.durableRev, 4)
        try storage.close()
    }
}

/// A value behind a lock, for the observers' threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.withLock { body(&value) }
    }
}
