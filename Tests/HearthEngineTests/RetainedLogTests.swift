import HearthTestSupport
import XCTest

@testable import HearthEngine

/// The leader's retained records, a ring replaced in place once full: for random runs of writes
/// and onDisconnect records, with resets, what a replica at each revision is sent is what a plain
/// list that drops its oldest entries would send.
final class RetainedLogTests: XCTestCase {
    func testTheRingKeepsWhatAListDroppingItsOldestKeeps() {
        var random = SeededRandom(seed: 19)
        for capacity in [1, 2, 7] {
            var log = RetainedLog(capacity: capacity)
            var model: [RetainedLog.Entry] = []
            var droppedRev: UInt64 = 0
            var rev: UInt64 = 0
            for step in 0..<400 {
                if random.next(60) == 0 {
                    rev += UInt64(random.next(5))
                    log.reset(at: rev)
                    model = []
                    droppedRev = rev
                    continue
                }
                let isWrite = random.next(3) != 0
                if isWrite { rev += 1 }
                let entry = RetainedLog.Entry(rev: rev, epoch: 1, isWrite: isWrite, payload: [UInt8(step % 256)][...])
                log.append(entry)
                model.append(entry)
                if model.count > capacity {
                    let first = model.removeFirst()
                    if first.isWrite { droppedRev = max(droppedRev, first.rev) }
                }
                for from in rev.saturatingSubtract(UInt64(capacity) + 2)...rev {
                    let expected =
                        from >= droppedRev ? model.filter { $0.isWrite ? $0.rev > from : $0.rev >= from } : nil
                    let got = log.entries(after: from)
                    XCTAssertEqual(
                        got?.map(\.rev), expected?.map(\.rev), "capacity \(capacity), step \(step), from \(from)")
                    XCTAssertEqual(got?.map(\.payload), expected?.map(\.payload), "capacity \(capacity), step \(step)")
                }
            }
        }
    }
}

extension UInt64 {
    fileprivate func saturatingSubtract(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}
