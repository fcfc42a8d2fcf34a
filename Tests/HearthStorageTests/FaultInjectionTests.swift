import HearthCore
import HearthJSON
import HearthStorage
import Logging
import XCTest

/// Every write, fsync, rename and directory fsync of appending and of compaction fails in turn.
/// Whatever fails, the storage throws or logs, never crashes, and reopening it recovers exactly
/// the writes acknowledged before the failure.
final class FaultInjectionTests: XCTestCase {
    let logs = LogCapture()

    func testEveryStepOfAppendingAndCompactingCanFail() throws {
        var scenarios = 0
        for policy in [FsyncPolicy.always, .everysec] {
            for operation in [FaultPlan.Operation.write, .fsync, .rename, .fsyncDirectory] {
                var n = 1
                while try runScenario(operation, n, policy: policy) {
                    n += 1
                    scenarios += 1
                    XCTAssertLessThan(n, 100, "the scenario should run out of \(operation) calls")
                }
                XCTAssertGreaterThan(n, 1, "\(operation) under \(policy) was never called")
            }
        }
        XCTAssertGreaterThan(scenarios, 40)
    }

    func testATornWriteWhoseTruncationFailsIsCutAtRecovery() throws {
        for n in 1...6 {
            XCTAssertTrue(try runScenario(.write, n, policy: .always, failTruncate: true))
        }
    }

    func testFailedStorageRefusesEveryLaterCallUntilReopened() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let plan = FaultPlan()
        var workload = Workload(seed: 31)
        let storage = try Storage.open(
            directory: dir.path, fileSystem: FaultyFileSystem(plan: plan), logger: logs.logger
        ).storage
        try storage.append(workload.batch(2))
        let segment = try XCTUnwrap(dir.segments().last)
        let size = dir.logEnd(segment)
        plan.failNth(.fsync, 1)
        XCTAssertThrowsError(try storage.append(workload.batch(3))) { error in
            XCTAssertEqual((error as? StorageError)?.kind, .io)
            XCTAssertEqual((error as? StorageError)?.operation, "fsync")
            XCTAssertTrue("\(error)".contains(dir.file(segment)), "\(error)")
            // The segment itself, not the temporary file it was created as.
            XCTAssertEqual((error as? StorageError)?.file, dir.file(segment))
            XCTAssertFalse("\(error)".contains(".tmp"), "\(error)")
        }
        XCTAssertEqual(dir.logEnd(segment), size, "the failed batch was truncated away")
        plan.disarm()
        XCTAssertNotNil(storage.failureError)
        XCTAssertFalse(storage.wantsCompaction)
        for call in [{ try storage.append(workload.batch(1)) }, { try storage.sync() }, { try storage.syncIfDue() }] {
            XCTAssertThrowsError(try call()) { error in
                XCTAssertEqual((error as? StorageError)?.kind, .failed)
                XCTAssertTrue("\(error)".contains("restarted"), "\(error)")
            }
        }
        XCTAssertTrue(logs.entries.contains { $0.level == .critical && $0.message.contains("storage fault") })
        XCTAssertNoThrow(try storage.close())
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 2)
    }

    func testEverysecFsyncFailureKeepsTheAcknowledgedWrites() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let plan = FaultPlan()
        var workload = Workload(seed: 32)
        let storage = try Storage.open(
            directory: dir.path, options: StorageOptions(fsync: .everysec), fileSystem: FaultyFileSystem(plan: plan),
            logger: logs.logger
        ).storage
        for _ in 0..<3 { try storage.append(workload.batch(2)) }
        try storage.syncIfDue()  // not due yet: less than a second since open
        plan.failAlways(.fsync)
        XCTAssertThrowsError(try storage.sync())
        plan.disarm()
        XCTAssertNoThrow(try storage.close())
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        try reopened.close()
        XCTAssertEqual(recovered.rev, 6)
        XCTAssertEqual(recovered.root, workload.database.root)
    }

    /// Appends batches with compactions in between while the `n`th call of `operation` fails,
    /// then reopens on the real file system and compares with what was acknowledged. Returns
    /// whether the fault was hit (false once `n` exceeds the calls made).
    func runScenario(
        _ operation: FaultPlan.Operation, _ n: Int, policy: FsyncPolicy, failTruncate: Bool = false
    ) throws -> Bool {
        let context = "\(operation) #\(n) failing under fsync \(policy)\(failTruncate ? ", truncate failing" : "")"
        let dir = TestDirectory("fault-\(operation)-\(n)-\(policy)")
        defer { dir.remove() }
        let plan = FaultPlan()
        let storage = try Storage.open(
            directory: dir.path, options: StorageOptions(fsync: policy), fileSystem: FaultyFileSystem(plan: plan),
            logger: logs.logger
        ).storage
        plan.failNth(operation, n)
        if failTruncate { plan.failAlways(.truncate) }
        var workload = Workload(seed: UInt64(n))
        var acknowledged = Database()
        var failed = false
        for step in 0..<12 {
            do {
                try storage.append(workload.batch(1 + step % 3))
                acknowledged = workload.database
                if step == 5 { try storage.sync() }
            } catch {
                XCTAssertTrue([.io, .failed].contains(error.kind), "\(context): \(error)")
                // A failed append leaves nothing of its batch; a failed sync (step 5) keeps the
                // batch appended before it, which was acknowledged.
                failed = true
                break
            }
            if step == 3 || step == 8 {
                storage.compact(root: workload.database.root, rev: workload.database.rev)
                // The first compaction is awaited (deterministic); the second runs while
                // appends go on.
                if step == 3 { storage.waitForCompaction() }
            }
        }
        if failed {
            XCTAssertThrowsError(try storage.append(workload.batch(1)), context) { error in
                XCTAssertEqual((error as? StorageError)?.kind, .failed, context)
            }
        }
        storage.waitForCompaction()
        try? storage.close()
        plan.disarm()
        let hit = !plan.failures.isEmpty

        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        XCTAssertEqual(recovered.rev, acknowledged.rev, context)
        XCTAssertEqual(recovered.root, acknowledged.root, context)
        // The reopened storage works.
        var database = Database(root: recovered.root, rev: recovered.rev)
        let path = try Path.parse("/after")
        if case .committed(let logged, _) = database.apply(
            .set(path: path, value: try PreparedValue(.int(1), at: path, limits: .default)), now: 0)
        {
            try reopened.append([logged])
        }
        try reopened.close()
        let report = StorageChecker.check(directory: dir.path)
        XCTAssertTrue(report.isOK, "\(context): \(report)")
        XCTAssertEqual(report.rev, acknowledged.rev + 1, context)
        return hit
    }
}
