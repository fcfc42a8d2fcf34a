/// CRC-32 (IEEE 802.3, the polynomial of zlib, gzip and PNG; reflected, initial and final XOR
/// 0xFFFFFFFF). `CRC32.checksum("123456789")` is `0xCBF43926`.
///
/// Computed eight bytes at a time with eight lookup tables ("slicing-by-8"): every log record
/// takes three checksums on the engine's thread (its revision, its payload, its header), and
/// zlib's `crc32_z` goes byte by byte until a run is long enough for its wider method, which
/// small records never are. The result is zlib's for every input (`CRC32Tests` compares them).
enum CRC32 {
    /// The CRC of `bytes`, continuing from `crc` (the CRC of the bytes before them; 0 to start).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var remainder = ~crc
        tables.withUnsafeBufferPointer { table in
            var offset = 0
            let count = bytes.count
            while count - offset >= 8 {
                let low = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) ^ remainder
                let high = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                remainder =
                    table[7 << 8 | Int(low & 0xFF)] ^ table[6 << 8 | Int((low >> 8) & 0xFF)]
                    ^ table[5 << 8 | Int((low >> 16) & 0xFF)] ^ table[4 << 8 | Int(low >> 24)]
                    ^ table[3 << 8 | Int(high & 0xFF)] ^ table[2 << 8 | Int((high >> 8) & 0xFF)]
                    ^ table[1 << 8 | Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                offset += 8
            }
            while offset < count {
                remainder = table[Int((remainder ^ UInt32(bytes[offset])) & 0xFF)] ^ (remainder >> 8)
                offset += 1
            }
        }
        return ~remainder
    }

    /// The CRC of `bytes[range]`, continuing from `crc`.
    static func checksum(_ bytes: [UInt8], _ range: Range<Int>, continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[range]), continuing: crc) }
    }

    /// Table `k` (entries `k << 8 ..< (k + 1) << 8`) holds each byte's remainder after it is
    /// followed by `k` zero bytes; table 0 is the classic byte-at-a-time table.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 << 8)
        for byte in 0..<256 {
            var remainder = UInt32(byte)
            for _ in 0..<8 { remainder = remainder & 1 == 1 ? (remainder >> 1) ^ 0xEDB8_8320 : remainder >> 1 }
            tables[byte] = remainder
        }
        for k in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(k - 1) << 8 | byte]
                tables[k << 8 | byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()
}
