import XCTest

@testable import HearthCore

#if canImport(Glibc)
import Glibc
#endif

/// Memory per stored value is dominated by one tree entry (`ChildMap.Branch`) per child; these
/// guard its size, which BENCHMARKS.md's memory per leaf depends on.
final class TreeMemoryTests: XCTestCase {
    func testANodeWithoutPriorityIsSmallAndOneWithAPriorityKeepsBoth() {
        XCTAssertLessThanOrEqual(MemoryLayout<Node>.size, 18)
        let plain = Node.leaf(.string("x"))
        XCTAssertNil(plain.priority)
        let prioritized = Node.leaf(.string("x"), priority: .number(.int(2)))
        XCTAssertEqual(prioritized.priority, .number(.int(2)))
        XCTAssertEqual(prioritized.leafValue, .string("x"))
        XCTAssertTrue(prioritized.hasSameValue(as: plain))
        XCTAssertNotEqual(prioritized, plain)
        XCTAssertNil(prioritized.withPriority(nil).priority)
        let object = Node.object(ChildMap().inserting(Key("a"), plain), priority: .string("p"))
        XCTAssertEqual(object.priority, .string("p"))
        XCTAssertEqual(object.child(Key("a")), plain)
    }

    #if canImport(Glibc)
    func testATreeEntryTakesAtMostNinetySixBytesOfHeap() {
        let tree = ChildMap().inserting(Key("k123456"), Node.leaf(.number(.int(7))))
        guard let branch = tree.root else { return XCTFail("no root") }
        // Glibc's module does not export malloc.h; the symbol is looked up as MemoryTrimmer does.
        typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_usable_size") else {
            return XCTFail("no malloc_usable_size")
        }
        let usableSize = unsafeBitCast(symbol, to: UsableSize.self)
        let usable = usableSize(Unmanaged.passUnretained(branch).toOpaque())
        // glibc's chunk is the usable size plus 8 bytes of header.
        XCTAssertLessThanOrEqual(usable + 8, 96, "a tree entry now takes a \(usable + 8)-byte chunk")
    }
    #endif
}
