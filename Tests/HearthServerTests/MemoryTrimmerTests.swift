import Synchronization
import XCTest

@testable import HearthServer

/// Trims counted by a stand-in for `malloc_trim` (a C function pointer cannot capture state).
private let trims = Atomic<Int>(0)

/// When the server gives freed memory back: after a burst of writes has paused, not while writes
/// continue, and not more often than its interval.
final class MemoryTrimmerTests: XCTestCase {
    func testTrimsOncePerPausedBurstAndNotWhileWritesContinue() {
        trims.store(0, ordering: .relaxed)
        let trimmer = MemoryTrimmer(minimumWrites: 100, minimumInterval: .zero) { _ in
            trims.add(1, ordering: .relaxed)
            return 1
        }
        trimmer.tick(writes: 50)
        trimmer.tick(writes: 50)
        XCTAssertEqual(trims.load(ordering: .relaxed), 0, "too few writes")
        trimmer.tick(writes: 500)
        trimmer.tick(writes: 900)
        XCTAssertEqual(trims.load(ordering: .relaxed), 0, "writes still arriving")
        trimmer.tick(writes: 900)
        XCTAssertEqual(trims.load(ordering: .relaxed), 1, "the burst paused")
        trimmer.tick(writes: 900)
        XCTAssertEqual(trims.load(ordering: .relaxed), 1, "nothing new since")
        trimmer.tick(writes: 950)
        trimmer.tick(writes: 950)
        XCTAssertEqual(trims.load(ordering: .relaxed), 1, "fewer than 100 new writes")
    }

    func testTrimsNoMoreOftenThanItsInterval() {
        trims.store(0, ordering: .relaxed)
        let trimmer = MemoryTrimmer(minimumWrites: 1, minimumInterval: .seconds(3600)) { _ in
            trims.add(1, ordering: .relaxed)
            return 1
        }
        trimmer.tick(writes: 10)
        trimmer.tick(writes: 10)
        trimmer.tick(writes: 20)
        trimmer.tick(writes: 20)
        XCTAssertEqual(trims.load(ordering: .relaxed), 1)
    }

    func testGlibcProvidesMallocTrim() {
        #if canImport(Glibc)
        XCTAssertNotNil(MemoryTrimmer.mallocTrim)
        // This test process runs on glibc's malloc: no jemalloc to purge, glibc's trim instead
        // (hearthd under jemalloc: AllocatorTests).
        XCTAssertNil(jemallocControl)
        XCTAssertNotNil(MemoryTrimmer.releaseFreeMemory)
        #endif
    }
}
