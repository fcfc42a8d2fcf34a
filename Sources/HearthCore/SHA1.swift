/// SHA-1 (FIPS 180-4), used only for the Firebase-compatible node hash (docs/PROTOCOL.md, "Values"), which
/// is an identity check, not a security boundary; the server also uses it to tell whether the
/// rules file changed since rules were accepted (docs/security.md, "Rules set at run time").
public struct SHA1 {
    private var h: (UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
    private var block: [UInt8] = []
    private var length: UInt64 = 0

    public init() { block.reserveCapacity(64) }

    public mutating func update<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        for byte in bytes { append(byte) }
    }

    public mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        append(0x80)
        while block.count != 56 { append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        var out: [UInt8] = []
        out.reserveCapacity(20)
        for word in [h.0, h.1, h.2, h.3, h.4] {
            out += [UInt8(word >> 24), UInt8((word >> 16) & 0xFF), UInt8((word >> 8) & 0xFF), UInt8(word & 0xFF)]
        }
        return out
    }

    private mutating func append(_ byte: UInt8) {
        block.append(byte)
        length &+= 1
        if block.count == 64 {
            compress()
            block.removeAll(keepingCapacity: true)
        }
    }

    private mutating func compress() {
        var w = [UInt32](repeating: 0, count: 80)
        for i in 0..<16 {
            w[i] =
                UInt32(block[4 * i]) << 24 | UInt32(block[4 * i + 1]) << 16
                | UInt32(block[4 * i + 2]) << 8 | UInt32(block[4 * i + 3])
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = (x << 1) | (x >> 31)
        }
        var (a, b, c, d, e) = h
        for i in 0..<80 {
            let f: UInt32
            let k: UInt32
            switch i {
            case 0..<20:
                f = (b & c) | (~b & d)
                k = 0x5A82_7999
            case 20..<40:
                f = b ^ c ^ d
                k = 0x6ED9_EBA1
            case 40..<60:
                f = (b & c) | (b & d) | (c & d)
                k = 0x8F1B_BCDC
            default:
                f = b ^ c ^ d
                k = 0xCA62_C1D6
            }
            let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
            e = d
            d = c
            c = (b << 30) | (b >> 2)
            b = a
            a = temp
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}

/// Standard Base64 with padding.
public func base64Encode(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 2 < bytes.count {
        let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [
            alphabet[Int(n >> 18)], alphabet[Int((n >> 12) & 63)], alphabet[Int((n >> 6) & 63)], alphabet[Int(n & 63)],
        ]
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let n = UInt32(bytes[i]) << 16
        out += [alphabet[Int(n >> 18)], alphabet[Int((n >> 12) & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
    } else if rest == 2 {
        let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out += [alphabet[Int(n >> 18)], alphabet[Int((n >> 12) & 63)], alphabet[Int((n >> 6) & 63)], UInt8(ascii: "=")]
    }
    return String(decoding: out, as: UTF8.self)
}
