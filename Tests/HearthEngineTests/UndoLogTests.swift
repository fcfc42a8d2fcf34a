import HearthCore
import HearthTestSupport
import XCTest

@testable import HearthEngine

/// A batch's undo log puts the tree back as of the last commit, whatever mix of in-place and
/// copied writes came after it, and taking it changes no snapshot anyone holds.
final class UndoLogTests: XCTestCase {
    func testUndoRestoresTheLastCommitAfterAnyMixOfWrites() throws {
        var writes = RandomWrites(seed: 2026)
        var inPlace = 0
        var copied = 0
        for round in 0..<200 {
            var database = Database()
            var undo = UndoLog(rev: 0)
            var committed: (root: Node, json: [UInt8]) = (.empty, Node.empty.jsonBytes(format: .export))
            var snapshots: [(root: Node, json: [UInt8])] = []
            for step in 0..<(1 + writes.random.next(40)) {
                switch writes.random.next(10) {
                case 0:
                    undo = UndoLog(rev: database.rev)
                    committed = (database.root, database.root.jsonBytes(format: .export))
                case 1:
                    snapshots.append((database.root, database.root.jsonBytes(format: .export)))
                default:
                    let write = try writes.write()
                    if let set = write.nonEmptySet, writes.random.next(4) != 0 {
                        guard let applied = database.applyInPlace(settingNonEmpty: set.value, at: set.path, now: 0)
                        else {
                            return XCTFail("an in-place write was declined")
                        }
                        undo.wrote(replacing: [applied.undoPoint])
                        inPlace += 1
                    } else {
                        guard case .committed(_, let before) = database.apply(write, now: 0) else {
                            return XCTFail("a write did not commit")
                        }
                        undo.wrote(over: before)
                        copied += 1
                    }
                }
                if writes.random.next(8) == 0 || step == 39 {
                    let restored = undo.undone(database.root)
                    XCTAssertEqual(restored, committed.root, "round \(round), step \(step)")
                    XCTAssertEqual(restored.jsonBytes(format: .export), committed.json, "round \(round), step \(step)")
                    XCTAssertEqual(committed.root.jsonBytes(format: .export), committed.json)
                }
            }
            for (i, snapshot) in snapshots.enumerated() {
                XCTAssertEqual(snapshot.root.jsonBytes(format: .export), snapshot.json, "round \(round): snapshot \(i)")
            }
        }
        // Both kinds of write were exercised many times.
        XCTAssertGreaterThan(inPlace, 500)
        XCTAssertGreaterThan(copied, 500)
    }
}
