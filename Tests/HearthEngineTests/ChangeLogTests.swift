import HearthCore
import HearthTestSupport
import XCTest

@testable import HearthEngine

/// The change log undoes writes exactly: for random writes (leaves and objects, priorities,
/// removals that empty ancestors, writes below leaves, onDisconnect-style overwrites), the node of
/// every location as of every retained revision is rebuilt from the current tree.
final class ChangeLogTests: XCTestCase {
    func testUndoRebuildsEveryLocationAtEveryRevision() throws {
        var writes = RandomWrites(seed: 77)
        let locations = writes.locations
        for round in 0..<20 {
            var database = Database()
            var log = ChangeLog(capacity: 40)
            var roots: [UInt64: Node] = [0: .empty]
            // Up to 250 writes: the log drops far more entries than it keeps, and reclaims
            // their slots.
            for _ in 0..<(60 + 10 * round) {
                let write = try writes.write()
                guard case .committed(let logged, let before) = database.apply(write, now: 0) else {
                    return XCTFail("a write did not commit")
                }
                if write.setsNonEmptyValue, let path = write.paths.first {
                    // The shortcut for a growing set finds what the general walk finds.
                    let general = ChangeLog.undoPoint(of: path, before: before, after: database.root)
                    let shortcut = before.undoPoint(ofNonEmptySetAt: path)
                    XCTAssertEqual(shortcut.path, general.path)
                    XCTAssertEqual(shortcut.before, general.before)
                }
                log.record(
                    rev: logged.rev, paths: write.paths, before: before, after: database.root,
                    setsNonEmptyValue: write.setsNonEmptyValue)
                roots[logged.rev] = database.root
            }
            let current = database.rev
            let oldest = try XCTUnwrap(log.oldestRev)
            // The capacity counts replaced nodes: every write here replaced 1 to 3.
            XCTAssertEqual(oldest, current - UInt64(log.count) + 1)
            XCTAssertTrue((40 / 3)...40 ~= log.count, "kept \(log.count) writes")
            XCTAssertFalse(log.covers(since: oldest - 2, current: current))
            for since in (oldest - 1)..<current {
                XCTAssertTrue(log.covers(since: since, current: current))
                let then = try XCTUnwrap(roots[since])
                for location in locations {
                    let now = database.root.child(at: location)
                    let expected = then.child(at: location)
                    guard let (rebuilt, _) = log.undo(location, to: since, current: now) else {
                        XCTAssertEqual(now, expected, "round \(round): \(location) untouched since \(since)")
                        continue
                    }
                    XCTAssertEqual(rebuilt, expected, "round \(round): \(location) as of \(since)")
                }
            }
        }
    }

    func testRollbackDropsNewerEntriesAndTheRingWraps() {
        var log = ChangeLog(capacity: 3)
        for rev in 1...205 as ClosedRange<UInt64> {
            log.record(rev: rev, paths: [Path([Key("x")])], before: .empty, after: .empty)
        }
        XCTAssertEqual(log.oldestRev, 203)
        XCTAssertEqual(log.count, 3)
        log.drop(after: 203)
        XCTAssertEqual(log.count, 1)
        XCTAssertTrue(log.covers(since: 202, current: 203))
        XCTAssertFalse(log.covers(since: 203, current: 203))
        log.record(rev: 204, paths: [], before: .empty, after: .empty)
        XCTAssertEqual(log.oldestRev, 203)
        log.drop(after: 0)
        XCTAssertEqual(log.count, 0)
        XCTAssertNil(log.oldestRev)
        XCTAssertEqual(ChangeLog(capacity: 0).oldestRev, nil)
    }

    func testTheCapacityBoundsReplacedNodesNotWrites() throws {
        var database = Database()
        var log = ChangeLog(capacity: 40)
        func apply(_ write: Write) throws {
            guard case .committed(let logged, let before) = database.apply(write, now: 0) else {
                return XCTFail("a write did not commit")
            }
            log.record(rev: logged.rev, paths: write.paths, before: before, after: database.root)
        }
        for i in 0..<10 {
            try apply(.set(path: Path([Key("single\(i)")]), value: PreparedValue(node: .leaf(.bool(true)))))
        }
        XCTAssertEqual(log.count, 10)
        let bulk = (0..<100).map { (path: Path([Key("k\($0)")]), value: PreparedValue(node: .leaf(.bool(true)))) }
        try apply(try Write.update(at: Path([Key("bulk")]), values: bulk))
        XCTAssertEqual(log.count, 1, "a 100-path write alone outweighs the capacity; the newest stays")
        XCTAssertEqual(log.oldestRev, database.rev)
        try apply(.set(path: Path([Key("after")]), value: PreparedValue(node: .leaf(.bool(true)))))
        XCTAssertEqual(log.count, 1, "the bulk write goes once a newer one needs the room")
    }
}
