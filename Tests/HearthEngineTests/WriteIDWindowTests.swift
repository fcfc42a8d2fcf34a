import HearthCore
import HearthStorage
import XCTest

@testable import HearthEngine

/// The window's bounds, each on its own: ids per client, idle clients, the number of clients,
/// a storage rollback, and the round trip through what a snapshot keeps.
final class WriteIDWindowTests: XCTestCase {
    func tag(_ client: String, _ n: UInt64, at: Int64 = 0, _ kind: WriteTag.Kind = .write) throws -> WriteTag {
        WriteTag(id: try XCTUnwrap(WriteID(client: client, sequence: n)), kind: kind, at: at)
    }

    func id(_ client: String, _ n: UInt64) throws -> WriteID { try XCTUnwrap(WriteID(client: client, sequence: n)) }

    func testCountBoundForgetsTheOldestAndRefusesThemAsExpired() throws {
        var window = WriteIDWindow(capacity: 2, retentionSeconds: 3600)
        for n in 1...4 as ClosedRange<UInt64> { window.remember(try tag("a", n), rev: n, pushKey: nil) }
        XCTAssertEqual(window.lookup(try id("a", 1), now: 0), .expired)
        XCTAssertEqual(window.lookup(try id("a", 2), now: 0), .expired)
        XCTAssertEqual(window.lookup(try id("a", 3), now: 0), .duplicate(.init(rev: 3, kind: .write, pushKey: nil)))
        XCTAssertEqual(window.lookup(try id("a", 5), now: 0), .new)
        XCTAssertEqual(window.lookup(try id("b", 1), now: 0), .new)
    }

    func testLeastRecentlyWritingClientsGoFirst() throws {
        var window = WriteIDWindow(capacity: 10, retentionSeconds: 3600, maxClients: 3)
        for (rev, client) in ["a", "b", "c", "a", "d"].enumerated() {
            window.remember(try tag(client, UInt64(rev + 1)), rev: UInt64(rev + 1), pushKey: nil)
        }
        XCTAssertEqual(window.clientCount, 3)
        XCTAssertEqual(window.lookup(try id("b", 2), now: 0), .new, "b wrote least recently")
        XCTAssertEqual(window.lookup(try id("a", 1), now: 0), .duplicate(.init(rev: 1, kind: .write, pushKey: nil)))
        XCTAssertEqual(window.lookup(try id("c", 3), now: 0), .duplicate(.init(rev: 3, kind: .write, pushKey: nil)))
    }

    func testIdleClientsAreForgotten() throws {
        var window = WriteIDWindow(capacity: 10, retentionSeconds: 10)
        window.remember(try tag("a", 1, at: 0), rev: 1, pushKey: nil)
        window.remember(try tag("b", 1, at: 5_000), rev: 2, pushKey: nil)
        XCTAssertEqual(
            window.lookup(try id("a", 1), now: 10_000), .duplicate(.init(rev: 1, kind: .write, pushKey: nil)))
        window.remember(try tag("c", 1, at: 12_000), rev: 3, pushKey: nil)
        XCTAssertEqual(window.clientCount, 2, "a is idle for 12 s")
        XCTAssertEqual(window.lookup(try id("b", 1), now: 15_001), .new)
    }

    func testRollbackForgetsTheUnsettledWritesOnly() throws {
        var window = WriteIDWindow(capacity: 10, retentionSeconds: 3600)
        window.remember(try tag("a", 1), rev: 1, pushKey: nil)
        window.settle()
        window.remember(try tag("a", 2), rev: 2, pushKey: nil)
        window.remember(try tag("b", 1, .push), rev: 3, pushKey: "-k")
        window.forget(after: 1)
        XCTAssertEqual(window.lookup(try id("a", 1), now: 0), .duplicate(.init(rev: 1, kind: .write, pushKey: nil)))
        XCTAssertEqual(window.lookup(try id("a", 2), now: 0), .new)
        XCTAssertEqual(window.lookup(try id("b", 1), now: 0), .new)
        XCTAssertEqual(window.clientCount, 1)
    }

    func testWhatASnapshotKeepsRebuildsTheSameWindow() throws {
        var window = WriteIDWindow(capacity: 2, retentionSeconds: 3600)
        window.remember(try tag("a", 1, at: 1), rev: 1, pushKey: nil)
        window.remember(try tag("b", 7, at: 2, .push), rev: 2, pushKey: "-key")
        window.remember(try tag("a", 2, at: 3, .transaction), rev: 3, pushKey: nil)
        window.remember(try tag("a", 3, at: 4), rev: 4, pushKey: nil)
        let log = window.log()
        XCTAssertEqual(log.evicted, ["a": 1])
        XCTAssertEqual(log.entries.map(\.rev), [2, 3, 4])
        var rebuilt = WriteIDWindow(recovered: log, capacity: 2, retentionSeconds: 3600, now: 5)
        for (client, n) in [("a", 1), ("a", 2), ("a", 3), ("b", 7), ("b", 8)] as [(String, UInt64)] {
            XCTAssertEqual(
                rebuilt.lookup(try id(client, n), now: 5), window.lookup(try id(client, n), now: 5), "\(client):\(n)")
        }
        XCTAssertEqual(rebuilt.lookup(try id("b", 7), now: 5), .duplicate(.init(rev: 2, kind: .push, pushKey: "-key")))
        // A smaller window after the restart forgets more, and remembers that it did.
        var smaller = WriteIDWindow(recovered: log, capacity: 1, retentionSeconds: 3600, now: 5)
        XCTAssertEqual(smaller.lookup(try id("a", 2), now: 5), .expired)
    }
}
