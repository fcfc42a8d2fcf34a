import Foundation
import HearthStorage

/// Which call of which kind fails. Counting starts when the plan is armed, so opening a storage
/// can be kept fault-free.
final class FaultPlan: @unchecked Sendable {
    enum Operation: String, CaseIterable, Sendable {
        case write, fsync, rename, fsyncDirectory, truncate
    }

    // Protected by `lock`.
    private let lock = NSLock()
    private var armed = false
    private var counts: [Operation: Int] = [:]
    private var failAt: [Operation: Int] = [:]
    private var failing: Set<Operation> = []
    private var triggered: [Operation] = []
    private var fsyncsHeld = false
    /// A failing write first writes half of its bytes (a disk that fills up mid-write).
    let partialWrites: Bool

    init(partialWrites: Bool = true) {
        self.partialWrites = partialWrites
    }

    /// Fails the `n`th call (1-based) of `operation` after arming.
    func failNth(_ operation: Operation, _ n: Int) {
        lock.withLock {
            failAt[operation] = n
            counts = [:]
            armed = true
        }
    }

    /// Fails every call of `operation` from now on.
    func failAlways(_ operation: Operation) {
        lock.withLock {
            _ = failing.insert(operation)
            armed = true
        }
    }

    func disarm() {
        lock.withLock {
            armed = false
            failAt = [:]
            failing = []
        }
    }

    /// Makes every fsync wait until `releaseFsyncs` (at most five seconds, so that a storage
    /// that wrongly waits for one fails its test rather than hanging it).
    func holdFsyncs() { lock.withLock { fsyncsHeld = true } }

    func releaseFsyncs() { lock.withLock { fsyncsHeld = false } }

    func waitWhileFsyncsHeld() {
        let deadline = Date().addingTimeInterval(5)
        while lock.withLock({ fsyncsHeld }), Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
    }

    /// The operations that failed, in order.
    var failures: [Operation] { lock.withLock { triggered } }

    func shouldFail(_ operation: Operation) -> Bool {
        lock.withLock {
            guard armed else { return false }
            counts[operation, default: 0] += 1
            if failing.contains(operation) || failAt[operation] == counts[operation] {
                triggered.append(operation)
                return true
            }
            return false
        }
    }
}

/// The real file system with faults injected per `FaultPlan`; a failure is reported like the
/// kernel would (EIO, or ENOSPC for writes) without performing the call (but see
/// `FaultPlan.partialWrites`).
struct FaultyFileSystem: FileSystem {
    let base = PosixFileSystem()
    let plan: FaultPlan

    func open(_ path: String, mode: OpenMode) throws(StorageError) -> OpenFile { try base.open(path, mode: mode) }

    func close(_ file: OpenFile) { base.close(file) }

    func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws(StorageError) {
        if plan.shouldFail(.write) {
            if plan.partialWrites, bytes.count > 1 {
                try base.write(file, Array(bytes.prefix(bytes.count / 2)), at: offset)
            }
            throw StorageError.io(operation: "write", path: file.path, errno: ENOSPC)
        }
        try base.write(file, bytes, at: offset)
    }

    func fsync(_ file: OpenFile) throws(StorageError) {
        plan.waitWhileFsyncsHeld()
        if plan.shouldFail(.fsync) { throw StorageError.io(operation: "fsync", path: file.path, errno: EIO) }
        try base.fsync(file)
    }

    func fsyncDirectory(_ path: String) throws(StorageError) {
        if plan.shouldFail(.fsyncDirectory) {
            throw StorageError.io(operation: "fsync directory", path: path, errno: EIO)
        }
        try base.fsyncDirectory(path)
    }

    func rename(_ source: String, to destination: String) throws(StorageError) {
        if plan.shouldFail(.rename) { throw StorageError.io(operation: "rename", path: source, errno: EIO) }
        try base.rename(source, to: destination)
    }

    func remove(_ path: String) throws(StorageError) { try base.remove(path) }

    func listDirectory(_ path: String) throws(StorageError) -> [String] { try base.listDirectory(path) }

    func readFile(_ path: String) throws(StorageError) -> [UInt8] { try base.readFile(path) }

    func truncate(_ file: OpenFile, to size: Int64) throws(StorageError) {
        if plan.shouldFail(.truncate) { throw StorageError.io(operation: "truncate", path: file.path, errno: EIO) }
        try base.truncate(file, to: size)
    }

    func size(_ file: OpenFile) throws(StorageError) -> Int64 { try base.size(file) }

    func makeDirectory(_ path: String) throws(StorageError) { try base.makeDirectory(path) }

    func fileExists(_ path: String) -> Bool { base.fileExists(path) }

    func lockExclusive(_ file: OpenFile) throws(StorageError) -> Bool { try base.lockExclusive(file) }
}
