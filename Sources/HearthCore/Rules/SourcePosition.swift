/// Steps through one JSON string literal of the source, decoding escapes, so that positions in
/// the decoded text can be mapped back to the file.
struct SourceString {
    enum Step {
        /// A raw byte of the literal, copied as is.
        case byte(UInt8)
        /// A scalar written as an escape.
        case scalar(Unicode.Scalar)
        /// The closing quote (consumed).
        case end
        case failure(String, offset: Int)
    }

    let bytes: [UInt8]
    /// Where the next step starts.
    private(set) var position: Int

    init(bytes: [UInt8], quote: Int) {
        self.bytes = bytes
        position = quote + 1
    }

    mutating func next() -> Step {
        guard position < bytes.count else { return .failure("unterminated string", offset: position) }
        let byte = bytes[position]
        if byte == UInt8(ascii: "\"") {
            position += 1
            return .end
        }
        if byte < 0x20 {
            return .failure("a raw control character or line break inside a string", offset: position)
        }
        guard byte == UInt8(ascii: "\\") else {
            position += 1
            return .byte(byte)
        }
        let escapeStart = position
        guard position + 1 < bytes.count else { return .failure("unterminated string", offset: position) }
        let escaped = bytes[position + 1]
        position += 2
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return .byte(escaped)
        case UInt8(ascii: "b"): return .byte(0x08)
        case UInt8(ascii: "f"): return .byte(0x0C)
        case UInt8(ascii: "n"): return .byte(0x0A)
        case UInt8(ascii: "r"): return .byte(0x0D)
        case UInt8(ascii: "t"): return .byte(0x09)
        case UInt8(ascii: "u"):
            guard var value = hex4() else { return .failure("malformed \\u escape", offset: escapeStart) }
            if (0xD800..<0xDC00).contains(value) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { return .failure("lone surrogate in \\u escape", offset: escapeStart) }
                position += 2
                guard let low = hex4(), (0xDC00..<0xE000).contains(low) else {
                    return .failure("lone surrogate in \\u escape", offset: escapeStart)
                }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(value) else {
                return .failure("lone surrogate in \\u escape", offset: escapeStart)
            }
            return .scalar(scalar)
        default: return .failure("invalid escape sequence", offset: escapeStart)
        }
    }

    private mutating func hex4() -> UInt32? {
        guard position + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            value = value * 16 + digit
        }
        position += 4
        return value
    }
}

/// Line and column arithmetic on the source bytes.
enum SourcePosition {
    /// The 1-based line and column (in Unicode scalars) of a byte offset.
    static func lineAndColumn(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var i = 0
        let end = min(offset, bytes.count)
        while i < end {
            let byte = bytes[i]
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return (line, column)
    }

    /// The source offset of the byte at `decodedOffset` of the decoded string whose opening
    /// quote is at `quote` (an escape maps to its backslash).
    static func offset(ofDecoded decodedOffset: Int, inStringAt quote: Int, in bytes: [UInt8]) -> Int {
        var cursor = SourceString(bytes: bytes, quote: quote)
        var decoded = 0
        while true {
            let before = cursor.position
            let width: Int
            switch cursor.next() {
            case .byte: width = 1
            case .scalar(let s): width = UTF8.width(s)
            case .end, .failure: return before
            }
            if decoded + width > decodedOffset { return before }
            decoded += width
        }
    }
}
