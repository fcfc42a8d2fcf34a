import Foundation
import HearthCore
import HearthStorage
import XCTest

/// The log read behind the engine, as a trigger runner reads it: records appended after a first
/// read (into a preallocated segment), across segments and the files compaction kept, the tree at
/// any kept revision, and writes' authors.
final class LogArchiveTests: XCTestCase {
    let logs = LogCapture()

    func testAReaderFollowsAppendsIntoAPreallocatedSegment() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var workload = Workload(seed: 31)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        let archive = LogArchive(dataDirectory: dir.path, retainedDirectory: dir.file("kept"))
        var reader = archive.reader(after: 0)
        XCTAssertNil(try reader.next(through: 0))
        try storage.append(workload.batch(3))
        XCTAssertEqual(try (1...3).map { _ in try reader.next(through: storage.lastRev)?.rev }, [1, 2, 3])
        XCTAssertNil(try reader.next(through: storage.lastRev), "nothing past the last record")
        // The reader has seen the zeros after rev 3; the next records are written over them.
        try storage.append(workload.batch(2))
        XCTAssertEqual(try reader.next(through: 5)?.rev, 4)
        XCTAssertEqual(try reader.next(through: 5)?.rev, 5)
        XCTAssertNil(try reader.next(through: 5))
        reader.close()
        try storage.close()
    }

    func testKeptFilesRebuildOldTreesUntilPrunedOrDropped() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let kept = dir.file("kept")
        try FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
        var options = StorageOptions.default
        options.retainedLogDirectory = kept
        var workload = Workload(seed: 32)
        let storage = try Storage.open(directory: dir.path, options: options, logger: logs.logger).storage
        var trees: [UInt64: Node] = [0: Node.empty]
        for _ in 0..<3 {
            for _ in 0..<4 {
                let write = workload.next()
                try storage.append([write])
                trees[write.rev] = workload.database.root
            }
            storage.compact(root: workload.database.root, rev: workload.database.rev)
            storage.waitForCompaction()
        }
        try storage.append(workload.batch(2))
        XCTAssertEqual(dir.snapshots(), ["snapshot-00000000000000000012"], "the data directory moved on")
        let archive = LogArchive(dataDirectory: dir.path, retainedDirectory: kept)
        for rev: UInt64 in [0, 1, 5, 8, 11, 12] {
            XCTAssertEqual(try archive.tree(at: rev)?.jsonValue(), trees[rev]?.jsonValue(), "tree at rev \(rev)")
        }
        var reader = archive.reader(after: 2)
        var revs: [UInt64] = []
        while let write = try reader.next(through: storage.lastRev) { revs.append(write.rev) }
        XCTAssertEqual(revs, Array(3...14), "read across kept and live segments")
        reader.close()
        XCTAssertGreaterThan(archive.retainedBytes, 0)

        archive.prune(keepingFrom: 8)
        XCTAssertEqual(try archive.tree(at: 8)?.jsonValue(), trees[8]?.jsonValue(), "what rev 8 needs is kept")
        XCTAssertNil(try archive.tree(at: 3), "older revisions are gone")
        archive.dropRetained()
        XCTAssertNil(try archive.tree(at: 8))
        XCTAssertEqual(try archive.tree(at: 12)?.jsonValue(), trees[12]?.jsonValue(), "the live snapshot stays")
        XCTAssertEqual(archive.retainedBytes, 0)
        try storage.close()
    }

    func testWritesKeepTheirAuthorsInTheLog() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        let user = AuthContext(
            uid: "alice", provider: "custom", claims: .object(["role": .string("w")]), expiresAt: nil)
        let path = try Path.parse("/a")
        try storage.append([
            CommittedWrite(
                rev: 1, overwrites: [(path, .leaf(.string("v1")))],
                author: WriteAuthor(time: 1_800_000_000_123, identity: user)),
            CommittedWrite(
                rev: 2, overwrites: [(path, .leaf(.string("v2")))], author: WriteAuthor(time: 7, identity: .admin)),
            CommittedWrite(
                rev: 3, overwrites: [(path, .leaf(.string("v3")))], author: WriteAuthor(time: 8, identity: nil)),
            CommittedWrite(rev: 4, overwrites: [(path, .leaf(.string("v4")))]),
        ])
        var reader = LogArchive(dataDirectory: dir.path, retainedDirectory: dir.file("kept")).reader(after: 0)
        let first = try XCTUnwrap(try reader.next(through: 4))
        XCTAssertEqual(first.author?.time, 1_800_000_000_123)
        XCTAssertEqual(first.author?.identity?.uid, "alice")
        XCTAssertEqual(first.author?.identity?.claims, .object(["role": .string("w")]))
        XCTAssertEqual(try reader.next(through: 4)?.author?.identity?.isAdmin, true)
        let anonymous = try XCTUnwrap(try reader.next(through: 4))
        XCTAssertEqual(anonymous.author?.time, 8)
        XCTAssertNil(anonymous.author?.identity)
        XCTAssertNil(try reader.next(through: 4)?.author, "a write logged without its author")
        reader.close()
        try storage.close()
        // Recovery reads the authored records too.
        let reopened = try Storage.open(directory: dir.path, logger: logs.logger)
        XCTAssertEqual(reopened.recovered.rev, 4)
        try reopened.storage.close()
    }
}
