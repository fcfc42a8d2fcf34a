import HearthJSON

/// One path segment: a child name.
///
/// Equality, hashing and ordering are defined on UTF-16 code units, never on Swift's canonical
/// equivalence: `"é"` (U+00E9) and `"e\u{301}"` are different keys. Ordering is the database's
/// key order (semantics §2.1): 32-bit integer keys first by numeric value (shorter text first on a
/// tie, then UTF-16 order), then all other keys by UTF-16 code units.
public struct Key: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The key's text.
    public let string: String
    /// The numeric value when the key is an integer key (§2.1), else nil.
    @usableFromInline let integerValue: Int32?

    /// Wraps a string without validation (callers validate user input with `Key.validated`).
    public init(_ string: String) {
        self.string = string
        self.integerValue = Key.parseIntegerKey(string)
    }

    public var description: String { string }

    public static func == (lhs: Key, rhs: Key) -> Bool {
        // Equal UTF-8 bytes exactly when equal UTF-16 code units; never canonical equivalence.
        lhs.string.utf8Equals(rhs.string)
    }

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
    public static func compare(_ lhs: Key, _ rhs: Key) -> Int {
        switch (lhs.integerValue, rhs.integerValue) {
        case (let a?, let b?):
            if a != b { return a < b ? -1 : 1 }
            let la = lhs.string.utf8.count
            let lb = rhs.string.utf8.count
            if la != lb { return la < lb ? -1 : 1 }
            return compareUTF16(lhs.string, rhs.string)
        case (.some, nil): return -1
        case (nil, .some): return 1
        case (nil, nil): return compareUTF16(lhs.string, rhs.string)
        }
    }

    /// True when `string` is an integer key: `^-?0*[0-9]{1,10}$` (after the leading zeros) within
    /// the 32-bit signed range.
    static func parseIntegerKey(_ string: String) -> Int32? {
        var utf8 = string.utf8.makeIterator()
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
    var a = a
    var b = b
    let fast: Int? = a.withUTF8 { x in
        b.withUTF8 { y in
            let n = Swift.min(x.count, y.count)
            var i = 0
            while i < n {
                let p = x[i]
                let q = y[i]
                if p != q {
                    if p < 0x80 && q < 0x80 { return p < q ? -1 : 1 }
                    return nil
                }
                i += 1
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        }
    }
    if let fast { return fast }
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
