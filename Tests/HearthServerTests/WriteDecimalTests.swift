import XCTest

@testable import HearthServer

/// Event prefixes are put together with their subscription's digits on the stack.
final class WriteDecimalTests: XCTestCase {
    func testWritesEveryIntegerAsItsDecimalText() {
        var values = [0, 1, 7, 9, 10, 11, 99, 100, 101, 12_345, 1_000_000, Int.max, Int.min, -1, -10]
        for _ in 0..<1_000 { values.append(Int.random(in: Int.min...Int.max)) }
        for value in values {
            let text = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
                String(decoding: buffer.prefix(writeDecimal(value, into: buffer)), as: UTF8.self)
            }
            XCTAssertEqual(text, "\(value)")
        }
    }
}
