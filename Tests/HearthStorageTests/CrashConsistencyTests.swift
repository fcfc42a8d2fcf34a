import Foundation
import HearthCore
import HearthStorage
import Logging
import XCTest

/// The `kill -9` model: the process may die between any two file-system calls, and every call
/// that returned has happened. An image of the data directory is taken before every mutating
/// call of appending and compacting; each image must recover to a state that holds every write
/// acknowledged when it was taken, and that is exactly the reference state at its revision.
final class CrashConsistencyTests: XCTestCase {
    func testEveryIntermediateStateRecovers() throws {
        let dir = TestDirectory()
        let images = TestDirectory("images")
        defer {
            dir.remove()
            images.remove()
        }
        let recorder = CrashImageRecorder(directory: dir.path, images: images.path)
        let logs = LogCapture()
        let storage = try Storage.open(
            directory: dir.path, fileSystem: RecordingFileSystem(recorder: recorder), logger: logs.logger
        ).storage
        var workload = Workload(seed: 41)
        var references = [workload.database]
        recorder.start()
        for step in 0..<14 {
            let batch = workload.batch(1 + step % 3)
            try storage.append(batch)
            references += Self.states(after: references.last ?? Database(), batch)
            recorder.acknowledge(workload.database.rev)
            if step == 4 || step == 9 {
                storage.compact(root: workload.database.root, rev: workload.database.rev)
                if step == 4 { storage.waitForCompaction() }
            }
        }
        storage.waitForCompaction()
        try storage.close()
        let taken = recorder.stop()
        XCTAssertGreaterThan(taken.count, 30)

        for image in taken {
            let (reopened, recovered) = try Storage.open(directory: image.path, logger: logs.logger)
            try reopened.close()
            XCTAssertGreaterThanOrEqual(recovered.rev, image.acknowledgedRev, "image \(image.path)")
            XCTAssertLessThan(Int(recovered.rev), references.count, "image \(image.path)")
            if Int(recovered.rev) < references.count {
                XCTAssertEqual(recovered.root, references[Int(recovered.rev)].root, "image \(image.path)")
            }
        }
    }

    /// The same with onDisconnect registrations in every batch: each image recovers exactly the
    /// registrations of the batch it recovers to — none lost, none that ran come back.
    func testEveryIntermediateStateRecoversItsRegistrations() throws {
        let dir = TestDirectory()
        let images = TestDirectory("images")
        defer {
            dir.remove()
            images.remove()
        }
        let recorder = CrashImageRecorder(directory: dir.path, images: images.path)
        let logs = LogCapture()
        let storage = try Storage.open(
            directory: dir.path, fileSystem: RecordingFileSystem(recorder: recorder), logger: logs.logger
        ).storage
        var workload = Workload(seed: 43)
        var registrations = RegistrationWorkload(seed: 44)
        // The live registrations after each revision (every batch ends with a write).
        var references: [UInt64: [OnDisconnectRegistration]] = [0: []]
        recorder.start()
        for step in 0..<14 {
            var batch: [LogRecord] = []
            for _ in 0..<(1 + step % 3) {
                batch.append(.onDisconnect(registrations.next()))
                batch.append(.write(workload.next()))
            }
            try storage.append(batch)
            references[workload.database.rev] = registrations.live
            recorder.acknowledge(workload.database.rev)
            if step == 4 || step == 9 {
                storage.compact(root: workload.database.root, rev: workload.database.rev)
                if step == 4 { storage.waitForCompaction() }
            }
        }
        storage.waitForCompaction()
        try storage.close()
        let taken = recorder.stop()
        XCTAssertGreaterThan(taken.count, 30)
        for image in taken {
            let (reopened, recovered) = try Storage.open(directory: image.path, logger: logs.logger)
            try reopened.close()
            XCTAssertGreaterThanOrEqual(recovered.rev, image.acknowledgedRev, "image \(image.path)")
            let expected = try XCTUnwrap(references[recovered.rev], "image \(image.path): rev \(recovered.rev)")
            XCTAssertEqual(reopened.onDisconnect.entries, expected, "image \(image.path)")
        }
    }

    /// The state after each write of `batch`, starting from `start`.
    static func states(after start: Database, _ batch: [CommittedWrite]) -> [Database] {
        var database = start
        return batch.map { write in
            database.replay(write)
            return database
        }
    }
}

/// Copies the data directory before every mutating call, serialising all calls so that each copy
/// is a state the directory really passed through.
final class CrashImageRecorder: @unchecked Sendable {
    struct Image {
        let path: String
        let acknowledgedRev: UInt64
    }

    let directory: String
    let images: String
    // Protected by `lock`, which is also held across every file-system call.
    let lock = NSRecursiveLock()
    private var recording = false
    private var acknowledgedRev: UInt64 = 0
    private var taken: [Image] = []

    init(directory: String, images: String) {
        self.directory = directory
        self.images = images
    }

    func start() { lock.withLock { recording = true } }

    func stop() -> [Image] {
        lock.withLock {
            recording = false
            return taken
        }
    }

    func acknowledge(_ rev: UInt64) { lock.withLock { acknowledgedRev = rev } }

    /// Runs `call` with an image taken just before it (when `mutating`).
    func around<T>(mutating: Bool, _ call: () throws(StorageError) -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        if mutating, recording { snapshot() }
        return try call()
    }

    private func snapshot() {
        let target = images + "/image-\(taken.count)"
        let manager = FileManager.default
        try? manager.createDirectory(atPath: target, withIntermediateDirectories: true)
        for name in (try? manager.contentsOfDirectory(atPath: directory)) ?? [] where name != "LOCK" {
            try? manager.copyItem(atPath: directory + "/" + name, toPath: target + "/" + name)
        }
        taken.append(Image(path: target, acknowledgedRev: acknowledgedRev))
    }
}

struct RecordingFileSystem: FileSystem {
    let base = PosixFileSystem()
    let recorder: CrashImageRecorder

    func open(_ path: String, mode: OpenMode) throws(StorageError) -> OpenFile {
        try recorder.around(mutating: mode == .createTruncate) { () throws(StorageError) in
            try base.open(path, mode: mode)
        }
    }

    func close(_ file: OpenFile) { base.close(file) }

    func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws(StorageError) {
        try recorder.around(mutating: true) { () throws(StorageError) in try base.write(file, bytes, at: offset) }
    }

    func fsync(_ file: OpenFile) throws(StorageError) {
        try recorder.around(mutating: true) { () throws(StorageError) in try base.fsync(file) }
    }

    func fsyncDirectory(_ path: String) throws(StorageError) {
        try recorder.around(mutating: true) { () throws(StorageError) in try base.fsyncDirectory(path) }
    }

    func rename(_ source: String, to destination: String) throws(StorageError) {
        try recorder.around(mutating: true) { () throws(StorageError) in try base.rename(source, to: destination) }
    }

    func remove(_ path: String) throws(StorageError) {
        try recorder.around(mutating: true) { () throws(StorageError) in try base.remove(path) }
    }

    func listDirectory(_ path: String) throws(StorageError) -> [String] {
        try recorder.around(mutating: false) { () throws(StorageError) in try base.listDirectory(path) }
    }

    func readFile(_ path: String) throws(StorageError) -> [UInt8] {
        try recorder.around(mutating: false) { () throws(StorageError) in try base.readFile(path) }
    }

    func truncate(_ file: OpenFile, to size: Int64) throws(StorageError) {
        try recorder.around(mutating: true) { () throws(StorageError) in try base.truncate(file, to: size) }
    }

    func size(_ file: OpenFile) throws(StorageError) -> Int64 { try base.size(file) }

    func makeDirectory(_ path: String) throws(StorageError) { try base.makeDirectory(path) }

    func fileExists(_ path: String) -> Bool { base.fileExists(path) }

    func lockExclusive(_ file: OpenFile) throws(StorageError) -> Bool { try base.lockExclusive(file) }
}
