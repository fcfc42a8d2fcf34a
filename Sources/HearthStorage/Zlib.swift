import CZlib

/// One-shot zlib (RFC 1950) compression of snapshots, through the system zlib.
enum Zlib {
    /// Appends `input` compressed at `level` to `output`; false (and `output` unchanged) only
    /// when zlib fails (out of memory).
    static func compress(_ input: [UInt8], level: Int, appendingTo output: inout [UInt8]) -> Bool {
        let start = output.count
        let bound = Int(compressBound(UInt(input.count)))
        output.append(contentsOf: repeatElement(0, count: bound))
        var produced = UInt(bound)
        let status = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                compress2(
                    destination.baseAddress.map { ($0 + start).assumingMemoryBound(to: Bytef.self) }, &produced,
                    source.baseAddress?.assumingMemoryBound(to: Bytef.self), UInt(source.count),
                    Int32(clamping: level))
            }
        }
        guard status == Z_OK else {
            output.removeSubrange(start...)
            return false
        }
        output.removeSubrange((start + Int(produced))...)
        return true
    }

    /// Decompresses `input`, which must inflate to exactly `expectedCount` bytes; otherwise the
    /// reason.
    static func decompress(_ input: UnsafeRawBufferPointer, expectedCount: Int) -> Result<[UInt8], ZlibError> {
        var produced = UInt(expectedCount)
        var status: Int32 = Z_OK
        // One spare byte so that a stream longer than announced is noticed.
        let output = [UInt8](unsafeUninitializedCapacity: expectedCount + 1) { buffer, count in
            produced = UInt(buffer.count)
            status = uncompress(
                buffer.baseAddress, &produced,
                input.baseAddress?.assumingMemoryBound(to: Bytef.self), UInt(input.count))
            count = status == Z_OK ? Int(produced) : 0
        }
        guard status == Z_OK else {
            switch status {
            case Z_BUF_ERROR:
                return .failure(
                    ZlibError(reason: "the compressed data is truncated or inflates larger than its header says"))
            case Z_DATA_ERROR:
                return .failure(
                    ZlibError(reason: "the compressed data is damaged (zlib: invalid or incomplete deflate data)"))
            case Z_MEM_ERROR: return .failure(ZlibError(reason: "out of memory while inflating"))
            default: return .failure(ZlibError(reason: "zlib error \(status)"))
            }
        }
        guard output.count == expectedCount else {
            return .failure(
                ZlibError(reason: "inflates to \(output.count) bytes, but its header says \(expectedCount)"))
        }
        return .success(output)
    }
}

/// Why zlib could not inflate a snapshot.
struct ZlibError: Error {
    let reason: String
}
