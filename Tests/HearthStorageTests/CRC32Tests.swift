import CZlib
import XCTest

@testable import HearthStorage

/// The log's and the snapshots' checksum must stay the CRC-32 that files already written carry,
/// which is zlib's: every length (aligned or not, across the eight-byte steps), every offset in
/// a buffer, and continued checksums agree with `crc32_z`.
final class CRC32Tests: XCTestCase {
    func testTheStandardCheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8), 0..<9), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([], 0..<0), 0)
        XCTAssertEqual(CRC32.checksum([], 0..<0, continuing: 0x1234_5678), 0x1234_5678)
    }

    func testAgreesWithZlibOnEveryLengthAndOffset() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<600).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for start in 0..<9 {
            for end in start...bytes.count {
                XCTAssertEqual(
                    CRC32.checksum(bytes, start..<end), zlib(bytes[start..<end], continuing: 0),
                    "bytes \(start)..<\(end)")
            }
        }
    }

    func testContinuedChecksumsAreTheChecksumOfTheWhole() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            let cut = Int.random(in: 0...bytes.count, using: &generator)
            let whole = CRC32.checksum(bytes, 0..<bytes.count)
            XCTAssertEqual(CRC32.checksum(bytes, cut..<bytes.count, continuing: CRC32.checksum(bytes, 0..<cut)), whole)
            XCTAssertEqual(whole, zlib(bytes[...], continuing: 0))
        }
    }

    private func zlib(_ bytes: ArraySlice<UInt8>, continuing crc: UInt32) -> UInt32 {
        bytes.withUnsafeBytes { raw in
            UInt32(
                truncatingIfNeeded: crc32_z(
                    UInt(crc), raw.baseAddress?.assumingMemoryBound(to: Bytef.self) ?? UnsafePointer(bitPattern: 1),
                    raw.count))
        }
    }
}
