import Dispatch
import Foundation
import HearthCore
import HearthStorage
import XCTest

/// Appends that leave their fsync to the storage's sync thread (`append(_:deferringSync:)`):
/// the engine writes the next batch while the last is fsynced; a batch counts as durable only
/// once `durableRev` has it, and a failed fsync cuts the log back to what was durable.
final class DeferredSyncTests: XCTestCase {
    let logs = LogCapture()

    /// No zero-filled room: every fsync the tests count is a batch's.
    private var options: StorageOptions {
        var options = StorageOptions.default
        options.walPreallocationBytes = 0
        return options
    }

    func testAppendReturnsBeforeItsFsyncAndTheBatchIsDurableOnceItEnds() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let disk = HeldFsyncs()
        let storage = try Storage.open(
            directory: dir.path, options: options, fileSystem: disk, logger: logs.logger
        ).storage
        let heard = Locked<[UInt64]>([])
        storage.durabilityObserver = { rev in heard.withLock { $0.append(rev) } }
        var workload = Workload(seed: 3)

        disk.hold()
        try storage.append(workload.batch(3).map(LogRecord.write), deferringSync: true)
        // The first fsync is held: the storage takes the next batch meanwhile.
        try storage.append(workload.batch(2).map(LogRecord.write), deferringSync: true)
        XCTAssertEqual(storage.lastRev, 5)
        XCTAssertEqual(storage.durableRev, 0, "nothing is durable while the fsync is held")
        XCTAssertEqual(heard.withLock { $0 }, [])

        disk.release()
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
        let storage = try Storage.open(
            directory: dir.path, options: options, fileSystem: FaultyFileSystem(plan: plan), logger: logs.logger
        ).storage
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
        let disk = HeldFsyncs()
        let storage = try Storage.open(
            directory: dir.path, options: options, fileSystem: disk, logger: logs.logger
        ).storage
        var workload = Workload(seed: 4)
        disk.hold()
        try storage.append(workload.batch(2).map(LogRecord.write), deferringSync: true)
        disk.release()
        // A batch appended the usual way (a replica's) is durable when `append` returns, and so is
        // everything before it.
        try storage.append(workload.batch(2).map(LogRecord.write))
        XCTAssertEqual(storage.durableRev, 4)
        storage.waitForDeferredSync()
        XCTAssertEqual(storage.durableRev, 4)
        try storage.close()
    }
}

/// The real file system, with fsyncs that wait while held (at most five seconds, so that a
/// storage that wrongly waits for one fails its test rather than hanging it).
final class HeldFsyncs: FileSystem, @unchecked Sendable {
    private let base = PosixFileSystem()
    private let held = Locked(false)
    private let released = DispatchSemaphore(value: 0)

    func hold() { held.withLock { $0 = true } }

    func release() {
        held.withLock { $0 = false }
        released.signal()
    }

    func fsync(_ file: OpenFile) throws(StorageError) {
        if held.withLock({ $0 }) {
            _ = released.wait(timeout: .now() + 5)
            released.signal()
        }
        try base.fsync(file)
    }

    func open(_ path: String, mode: OpenMode) throws(StorageError) -> OpenFile { try base.open(path, mode: mode) }
    func close(_ file: OpenFile) { base.close(file) }
    func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws(StorageError) {
        try base.write(file, bytes, at: offset)
    }
    func fsyncDirectory(_ path: String) throws(StorageError) { try base.fsyncDirectory(path) }
    func rename(_ source: String, to destination: String) throws(StorageError) {
        try base.rename(source, to: destination)
    }
    func remove(_ path: String) throws(StorageError) { try base.remove(path) }
    func listDirectory(_ path: String) throws(StorageError) -> [String] { try base.listDirectory(path) }
    func readFile(_ path: String) throws(StorageError) -> [UInt8] { try base.readFile(path) }
    func truncate(_ file: OpenFile, to size: Int64) throws(StorageError) { try base.truncate(file, to: size) }
    func size(_ file: OpenFile) throws(StorageError) -> Int64 { try base.size(file) }
    func makeDirectory(_ path: String) throws(StorageError) { try base.makeDirectory(path) }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func lockExclusive(_ file: OpenFile) throws(StorageError) -> Bool { try base.lockExclusive(file) }
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
