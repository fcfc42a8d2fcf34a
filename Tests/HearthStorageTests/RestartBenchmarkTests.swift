import Foundation
import HearthCore
import HearthStorage
import Logging
import XCTest

/// Restart time with 1M nodes (target: ready within 3 s). Skipped unless HEARTH_STORAGE_BENCH is
/// set; run it in release: `HEARTH_STORAGE_BENCH=1 swift test -c release --filter RestartBenchmark`.
final class RestartBenchmarkTests: XCTestCase {
    func testRestartWithOneMillionNodes() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["HEARTH_STORAGE_BENCH"] != nil, "benchmark")
        let logs = LogCapture()
        for (name, root) in [("1M leaves under 10k parents", Self.nested()), ("1M children of one node", Self.flat())] {
            let dir = TestDirectory("bench")
            defer { dir.remove() }
            let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
            var clock = ContinuousClock.now
            storage.compact(root: root, rev: 0)
            storage.waitForCompaction()
            let compaction = ContinuousClock.now - clock
            try storage.close()
            clock = ContinuousClock.now
            let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
            let restart = ContinuousClock.now - clock
            try reopened.close()
            XCTAssertEqual(recovered.root.childCount, root.childCount)
            let bytes = dir.read(try XCTUnwrap(dir.snapshots().first)).count
            FileHandle.standardError.write(
                Data("\(name): snapshot \(bytes) bytes written in \(compaction); restart in \(restart)\n".utf8))
            XCTAssertLessThan(restart, .seconds(3))
        }
    }

    /// Replaying a full log: 64 MiB of single-leaf sets (the default compaction threshold).
    func testRestartReplayingAFullLog() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["HEARTH_STORAGE_BENCH"] != nil, "benchmark")
        let logs = LogCapture()
        let dir = TestDirectory("bench")
        defer { dir.remove() }
        let storage = try Storage.open(
            directory: dir.path, options: StorageOptions(fsync: .never), logger: logs.logger
        ).storage
        var database = Database()
        var batch: [CommittedWrite] = []
        var clock = ContinuousClock.now
        while storage.walBytes < 64 * 1024 * 1024 {
            let rev = database.rev + 1
            let path = Path([Key("items"), Key("-NkPushId\(rev)")])
            let write = CommittedWrite(
                rev: rev, overwrites: [(path, .leaf(.string("a small value \(rev)")))])
            database.replay(write)
            batch.append(write)
            if batch.count == 100 {
                try storage.append(batch)
                batch.removeAll()
            }
        }
        try storage.append(batch)
        let writing = ContinuousClock.now - clock
        try storage.close()
        clock = ContinuousClock.now
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        let restart = ContinuousClock.now - clock
        try reopened.close()
        XCTAssertEqual(recovered.rev, database.rev)
        FileHandle.standardError.write(
            Data("\(database.rev) records (64 MiB) appended in \(writing); replayed in \(restart)\n".utf8))
    }

    static func nested() -> Node {
        var children = ChildMap()
        for i in 0..<10_000 {
            var leaves = ChildMap()
            for j in 0..<100 {
                leaves.insert(
                    Key("field\(j)"), .leaf(j % 2 == 0 ? .string("value \(i) \(j)") : .number(.int(Int64(i &* j)))))
            }
            children.insert(Key("user\(i)"), .object(leaves))
        }
        return .object(children)
    }

    static func flat() -> Node {
        var children = ChildMap()
        for i in 0..<1_000_000 { children.insert(Key("-Nk\(i)"), .leaf(.number(.int(Int64(i))))) }
        return .object(children)
    }
}
