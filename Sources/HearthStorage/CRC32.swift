import CZlib

/// CRC-32 (IEEE 802.3, the polynomial of zlib, gzip and PNG; reflected, initial and final XOR
/// 0xFFFFFFFF), computed by zlib. `CRC32.checksum("123456789")` is `0xCBF43926`.
enum CRC32 {
    /// The CRC of `bytes`, continuing from `crc` (the CRC of the bytes before them; 0 to start).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return UInt32(truncatingIfNeeded: crc32_z(UInt(crc), base.assumingMemoryBound(to: Bytef.self), bytes.count))
    }

    /// The CRC of `bytes[range]`, continuing from `crc`.
    static func checksum(_ bytes: [UInt8], _ range: Range<Int>, continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[range]), continuing: crc) }
    }
}
