/// Word-at-a-time byte tests (SWAR) over eight bytes loaded as a `UInt64`.
@usableFromInline
enum _JSONSWAR {
    @inlinable static var ones: UInt64 { 0x0101_0101_0101_0101 }
    @inlinable static var highs: UInt64 { 0x8080_8080_8080_8080 }

    /// The high bit of each byte that is `"`, `\`, below 0x20 or at least 0x80 (the word loaded
    /// little-endian: its first byte lowest); zero when there is none. Bits above the lowest one
    /// may be wrong (a borrow carries into the next byte), but the lowest is exact: no borrow
    /// comes from bytes before the first that needs attention.
    @inlinable @inline(__always)
    static func attentionInString(_ word: UInt64) -> UInt64 {
        let belowSpace = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let quoteOrBackslash = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash) & highs
        return belowSpace | quoteOrBackslash | (word & highs)
    }

    /// The index of the first byte of `base[i..<count]` that a string's parser or writer must
    /// look at (`"`, `\`, below 0x20 or at least 0x80), eight bytes at a time: a word that holds
    /// one gives its place at once. Where fewer than eight bytes are left, the first of them (the
    /// caller looks at those one by one: gathering so few into a word costs more than it saves).
    @inlinable @inline(__always)
    static func skipPlainASCII(_ base: UnsafeRawPointer, from i: Int, count: Int) -> Int {
        var i = i
        while i + 8 <= count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let attention = attentionInString(word)
            if attention != 0 { return i + attention.trailingZeroBitCount >> 3 }
            i += 8
        }
        return i
    }
}
