import NIOCore
import XCTest

@testable import HearthServer

/// Event prefixes are written as digits straight into a connection's outbox.
final class WriteDecimalTests: XCTestCase {
    func testWritesEveryIntegerAsItsDecimalText() {
        var values = [0, 1, 7, 9, 10, 11, 99, 100, 101, 12_345, 1_000_000, Int.max, Int.min, -1, -10]
        for _ in 0..<1_000 { values.append(Int.random(in: Int.min...Int.max)) }
        for value in values {
            var buffer = ByteBuffer()
            buffer.writeStaticString("x")
            buffer.writeDecimal(value)
            XCTAssertEqual(buffer.readString(length: buffer.readableBytes), "x\(value)")
        }
    }
}
