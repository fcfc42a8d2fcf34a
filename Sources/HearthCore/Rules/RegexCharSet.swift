/// A set of Unicode scalars: ranges, possibly negated. Used for `[…]`, `\d \w \s` and their
/// complements.
struct RegexCharSet: Sendable {
    var ranges: [ClosedRange<UInt32>] = []
    var negated = false

    static let digit = RegexCharSet(ranges: [0x30...0x39])
    static let word = RegexCharSet(ranges: [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
    /// JavaScript's white space and line terminators.
    static let space = RegexCharSet(ranges: [
        0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A, 0x2028...0x2029,
        0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
    ])

    /// The set for `\d \w \s \D \W \S`, or nil for another letter.
    static func classEscape(_ c: Unicode.Scalar) -> RegexCharSet? {
        switch c {
        case "d": return digit
        case "w": return word
        case "s": return space
        case "D": return digit.complemented
        case "W": return word.complemented
        case "S": return space.complemented
        default: return nil
        }
    }

    /// The same set as explicit ranges, negation resolved.
    var complemented: RegexCharSet {
        if negated { return RegexCharSet(ranges: ranges) }
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
            next = max(next, range.upperBound + 1)
        }
        if next <= 0x10FFFF { result.append(next...0x10FFFF) }
        return RegexCharSet(ranges: result)
    }

    /// Adds every member of `other` (a class inside a set).
    mutating func add(_ other: RegexCharSet) {
        ranges.append(contentsOf: other.negated ? other.complemented.ranges : other.ranges)
    }

    func contains(_ value: UInt32) -> Bool {
        var found = false
        for range in ranges where range.contains(value) {
            found = true
            break
        }
        return found != negated
    }

    /// Membership ignoring case: the value, its lowercase or its uppercase form.
    func contains(_ value: UInt32, ignoringCase: Bool) -> Bool {
        guard ignoringCase else { return contains(value) }
        let lower = caseFolded(value, upper: false)
        let upper = caseFolded(value, upper: true)
        let any = inRanges(value) || inRanges(lower) || inRanges(upper)
        return any != negated
    }

    private func inRanges(_ value: UInt32) -> Bool {
        for range in ranges where range.contains(value) { return true }
        return false
    }
}

/// The simple (one-scalar) lowercase or uppercase form of a scalar; the scalar itself when it
/// has none or maps to several.
func caseFolded(_ value: UInt32, upper: Bool) -> UInt32 {
    if value < 0x80 {
        if upper, value >= 0x61, value <= 0x7A { return value - 0x20 }
        if !upper, value >= 0x41, value <= 0x5A { return value + 0x20 }
        return value
    }
    guard let scalar = Unicode.Scalar(value) else { return value }
    let mapped = upper ? scalar.properties.uppercaseMapping : scalar.properties.lowercaseMapping
    let scalars = mapped.unicodeScalars
    guard scalars.count == 1, let first = scalars.first else { return value }
    return first.value
}
