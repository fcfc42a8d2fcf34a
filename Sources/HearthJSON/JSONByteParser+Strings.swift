/// Strings: scanning, validating UTF-8 and decoding escapes.
extension _JSONByteParser {
    /// Parses the string whose opening quote is at `pos`.
    mutating func parseString() throws(JSONError) -> String {
        switch try scanString() {
        case .plain(let range):
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        case .escaped(let quote, let firstEscape):
            return try parseEscapedString(quote: quote, firstEscape: firstEscape)
        }
    }

    /// A string scanned up to its end or its first escape (`scanString`).
    enum ScannedString {
        /// The bytes between the quotes (already validated; `pos` is past the closing quote).
        case plain(Range<Int>)
        /// The string holds an escape: continue with `parseEscapedString`.
        case escaped(quote: Int, firstEscape: Int)
    }

    /// Scans the string whose opening quote is at `pos`, validating it, up to its closing quote
    /// or its first escape.
    @inline(__always)
    mutating func scanString() throws(JSONError) -> ScannedString {
        let quote = pos
        let start = pos + 1
        var i = start
        while true {
            i = skipPlainASCII(from: i)
            guard i < end else { throw unexpected(at: end, expecting: "'\"'") }
            let b = bytes[i]
            if b == asciiQuote {
                let length = i - start
                if length > maxStringBytes { throw stringTooLong(at: quote) }
                pos = i + 1
                return .plain(start..<i)
            } else if b == asciiBackslash {
                return .escaped(quote: quote, firstEscape: i)
            } else if b < 0x20 {
                throw controlCharacter(at: i)
            } else if b >= 0x80 {
                i = try validateUTF8Sequence(at: i)
            } else {
                i += 1
            }
        }
    }

    /// Continues a string that contains escapes, decoding it into `scratch`.
    mutating func parseEscapedString(quote: Int, firstEscape: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = quote + 1
        var i = firstEscape
        while true {
            i = skipPlainASCII(from: i)
            guard i < end else { throw unexpected(at: end, expecting: "'\"'") }
            let b = bytes[i]
            if b == asciiQuote {
                appendRun(runStart, i)
                if scratch.count > maxStringBytes { throw stringTooLong(at: quote) }
                pos = i + 1
                return String(decoding: scratch, as: UTF8.self)
            } else if b == asciiBackslash {
                appendRun(runStart, i)
                i = try decodeEscape(at: i)
                runStart = i
            } else if b < 0x20 {
                throw controlCharacter(at: i)
            } else if b >= 0x80 {
                i = try validateUTF8Sequence(at: i)
            } else {
                i += 1
            }
        }
    }

    @inline(__always)
    func skipPlainASCII(from i: Int) -> Int {
        guard let base = bytes.baseAddress else { return i }
        return _JSONSWAR.skipPlainASCII(base, from: i, count: end)
    }

    @inline(__always)
    mutating func appendRun(_ from: Int, _ to: Int) {
        if from < to {
            scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[from..<to]))
        }
    }

    /// Decodes the escape whose backslash is at `i` into `scratch`; returns the index after it.
    mutating func decodeEscape(at i: Int) throws(JSONError) -> Int {
        guard i + 1 < end else { throw unexpected(at: end, expecting: "an escape character") }
        let decoded: UInt8
        switch bytes[i + 1] {
        case asciiQuote: decoded = asciiQuote
        case asciiBackslash: decoded = asciiBackslash
        case UInt8(ascii: "/"): decoded = UInt8(ascii: "/")
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = 0x0A
        case UInt8(ascii: "r"): decoded = 0x0D
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"):
            let unit = try hex4(at: i + 2)
            var scalar = unit
            var next = i + 6
            if unit >= 0xD800 && unit <= 0xDBFF {
                guard next + 1 < end, bytes[next] == asciiBackslash, bytes[next + 1] == UInt8(ascii: "u")
                else { throw loneSurrogate(at: i, unit: unit) }
                let low = try hex4(at: next + 2)
                guard low >= 0xDC00 && low <= 0xDFFF else { throw loneSurrogate(at: i, unit: unit) }
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                next += 6
            } else if unit >= 0xDC00 && unit <= 0xDFFF {
                throw loneSurrogate(at: i, unit: unit)
            }
            appendScalar(scalar)
            return next
        default:
            throw invalidEscape(at: i)
        }
        scratch.append(decoded)
        return i + 2
    }

    /// The value of the four hex digits at `i`.
    @inline(__always)
    func hex4(at i: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for j in i..<(i + 4) {
            guard j < end else { throw unexpected(at: end, expecting: "a hex digit") }
            let c = bytes[j]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c &- UInt8(ascii: "A") &+ 10
            default: throw unexpected(at: j, expecting: "a hex digit")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    @inline(__always)
    mutating func appendScalar(_ v: UInt32) {
        if v < 0x80 {
            scratch.append(UInt8(v))
        } else if v < 0x800 {
            scratch.append(UInt8(0xC0 | (v >> 6)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        } else if v < 0x10000 {
            scratch.append(UInt8(0xE0 | (v >> 12)))
            scratch.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        } else {
            scratch.append(UInt8(0xF0 | (v >> 18)))
            scratch.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        }
    }

    /// Validates the multi-byte UTF-8 sequence whose lead byte (>= 0x80) is at `i`; returns the
    /// index after it. Rejects stray continuation bytes, overlong forms, encoded surrogates,
    /// scalars above U+10FFFF and truncated sequences, reporting the lead byte's offset.
    @inline(__always)
    func validateUTF8Sequence(at i: Int) throws(JSONError) -> Int {
        let lead = bytes[i]
        switch lead {
        case 0xC2...0xDF:
            if isContinuation(i + 1) { return i + 2 }
        case 0xE0:
            if inRange(i + 1, 0xA0, 0xBF), isContinuation(i + 2) { return i + 3 }
        case 0xE1...0xEC, 0xEE...0xEF:
            if isContinuation(i + 1), isContinuation(i + 2) { return i + 3 }
        case 0xED:
            if inRange(i + 1, 0x80, 0x9F), isContinuation(i + 2) { return i + 3 }
        case 0xF0:
            if inRange(i + 1, 0x90, 0xBF), isContinuation(i + 2), isContinuation(i + 3) { return i + 4 }
        case 0xF1...0xF3:
            if isContinuation(i + 1), isContinuation(i + 2), isContinuation(i + 3) { return i + 4 }
        case 0xF4:
            if inRange(i + 1, 0x80, 0x8F), isContinuation(i + 2), isContinuation(i + 3) { return i + 4 }
        default:
            break
        }
        throw invalidUTF8(at: i)
    }

    @inline(__always)
    func isContinuation(_ j: Int) -> Bool {
        j < end && bytes[j] & 0xC0 == 0x80
    }

    @inline(__always)
    func inRange(_ j: Int, _ low: UInt8, _ high: UInt8) -> Bool {
        j < end && bytes[j] >= low && bytes[j] <= high
    }
}
