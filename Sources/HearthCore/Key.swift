import HearthJSON

/// One path segment: a child name.
///
/// Equality, hashing and ordering are defined on UTF-16 code units, never on Swift's canonical
/// equivalence: `"é"` (U+00E9) and `"e\u{301}"` are different keys. Ordering is the database's
/// key order (docs/PROTOCOL.md, "Paths and keys"): 32-bit integer keys first by numeric value (shorter text first on a
/// tie, then UTF-16 order), then all other keys by UTF-16 code units.
public struct Key: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The key's text.
    public let string: String
    /// The key's class and the start of its order, packed so that most comparisons are one
    /// integer comparison (the tree's hottest operation; see `Key.orderPrefix`).
    @usableFromInline let prefix: UInt64

    /// Wraps a string without validation (callers validate user input with `Key.validated`).
    public init(_ string: String) {
        self.string = string
        var text = string
        self.prefix = text.withUTF8 { Key.orderPrefix(of: $0) }
    }

    /// Wraps bytes already known to be `string`'s UTF-8 (the text is not read again).
    package init(_ string: String, utf8 bytes: UnsafeBufferPointer<UInt8>) {
        self.string = string
        self.prefix = Key.orderPrefix(of: bytes)
    }

    public var description: String { string }

    public static func == (lhs: Key, rhs: Key) -> Bool {
        // Equal UTF-8 bytes exactly when equal UTF-16 code units; never canonical equivalence.
        lhs.prefix == rhs.prefix && (lhs.prefixIsWholeKey || lhs.string.utf8Equals(rhs.string))
    }

    /// Whether the prefix holds the whole key: a non-integer key of at most six bytes (its seventh
    /// byte is padding, and keys hold no NUL), so that equal prefixes mean equal keys.
    @inlinable var prefixIsWholeKey: Bool { prefix >> 56 == 1 && prefix & 0xFF == 0 }

    public func hash(into hasher: inout Hasher) {
        // UTF-8 bytes identify the UTF-16 sequence uniquely; hashing them avoids normalisation.
        var s = string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)
    }

    public static func < (lhs: Key, rhs: Key) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Three-way comparison in key order: negative, zero or positive.
    @inlinable public static func compare(_ lhs: Key, _ rhs: Key) -> Int {
        let a = lhs.prefix
        let b = rhs.prefix
        if a != b {
            // Integer keys (class 0) differ in value or length; between classes, integers first.
            if a >> 56 == 0 || b >> 56 == 0 { return a < b ? -1 : 1 }
            // Two strings: the first differing byte decides when both bytes are ASCII (UTF-8 and
            // UTF-16 orders agree there); a non-ASCII difference needs the full comparison.
            let shift = UInt64(63 - (a ^ b).leadingZeroBitCount) & ~7
            if (a >> shift) & 0x80 == 0, (b >> shift) & 0x80 == 0 { return a < b ? -1 : 1 }
        }
        if a == b, lhs.prefixIsWholeKey { return 0 }
        // Equal prefixes (integers of one value and length, or strings sharing seven bytes).
        return compareUTF16(lhs.string, rhs.string)
    }

    /// The packed order prefix of a key's UTF-8 bytes. An integer key is class 0: its
    /// value offset by 2^31 in bits 8–39 and its text length in bits 0–7, so that unsigned order
    /// is key order up to ties of equal value and length. Any other key is class 1 (top byte) and
    /// its first seven bytes, zero-padded (keys hold no NUL), so that unsigned order is byte
    /// order up to the first seven bytes.
    static func orderPrefix(of bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        if let value = parseIntegerKey(bytes) {
            return UInt64(UInt32(bitPattern: value) ^ 0x8000_0000) << 8 | UInt64(min(bytes.count, 255))
        }
        var prefix: UInt64 = 1 << 56
        for i in 0..<min(bytes.count, 7) {
            prefix |= UInt64(bytes[i]) << (48 - 8 * UInt64(i))
        }
        return prefix
    }

    /// True when `string` is an integer key: `^-?0*[0-9]{1,10}$` (after the leading zeros) within
    /// the 32-bit signed range.
    static func parseIntegerKey(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        var utf8 = bytes.makeIterator()
        guard var byte = utf8.next() else { return nil }
        var negative = false
        if byte == UInt8(ascii: "-") {
            negative = true
            guard let next = utf8.next() else { return nil }
            byte = next
        }
        var value: Int64 = 0
        var significantDigits = 0
        while true {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if significantDigits > 0 || byte != UInt8(ascii: "0") {
                significantDigits += 1
                if significantDigits > 10 { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            guard let next = utf8.next() else { break }
            byte = next
        }
        if negative { value = -value }
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int32(value)
    }
}

/// Compares two strings by UTF-16 code units (JavaScript `<`), returning -1, 0 or 1.
///
/// UTF-8 byte order equals code point order, which differs from UTF-16 order only when one side
/// is in U+E000–U+FFFF and the other is a supplementary character (a surrogate pair in UTF-16).
/// So compare the UTF-8 bytes, and decide by code points only when the first difference is in a
/// non-ASCII character.
@inlinable
public func compareUTF16(_ a: String, _ b: String) -> Int {
    // 2: undecided by the bytes (a non-ASCII difference), or no contiguous UTF-8.
    let fast =
        a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Int in
                let n = Swift.min(x.count, y.count)
                var i = 0
                while i < n {
                    let p = x[i]
                    let q = y[i]
                    if p != q {
                        if p < 0x80 && q < 0x80 { return p < q ? -1 : 1 }
                        return 2
                    }
                    i += 1
                }
                return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
            } ?? 2
        } ?? 2
    if fast != 2 { return fast }
    return compareUTF16Scalars(a, b)
}

@usableFromInline
func compareUTF16Scalars(_ a: String, _ b: String) -> Int {
    var ia = a.unicodeScalars.makeIterator()
    var ib = b.unicodeScalars.makeIterator()
    while true {
        switch (ia.next(), ib.next()) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case (let x?, let y?):
            if x == y { continue }
            return utf16Rank(x) < utf16Rank(y) ? -1 : 1
        }
    }
}

/// A value whose order matches the first UTF-16 code unit of a scalar, with ties (two scalars
/// both in the supplementary planes) broken by the scalar itself, which matches the second unit.
@inlinable
func utf16Rank(_ scalar: Unicode.Scalar) -> UInt32 {
    let v = scalar.value
    if v >= 0x10000 {
        // High surrogate 0xD800...0xDBFF: sorts between U+D7FF and U+E000.
        return 0xD800_0000 &+ (v &- 0x10000)
    }
    if v >= 0xE000 { return 0xF000_0000 &+ v }
    return v << 16
}

extension Key {
    /// The pseudo-key `.priority`, valid only as the last segment of an update or setPriority path.
    public static let priority = Key(".priority")

    /// Sentinels for query bounds: before and after every real key.
    public static let minName = "[MIN_NAME]"
    public static let maxName = "[MAX_NAME]"
}
