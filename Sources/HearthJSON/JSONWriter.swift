/// Building blocks for emitting compact JSON (no insignificant whitespace) straight into a byte
/// buffer, usable without building a `JSONValue` first.
///
/// Output conventions:
/// - Strings: `"` and `\` are escaped as `\"` and `\\`; control characters below U+0020 as `\b`,
///   `\t`, `\n`, `\f`, `\r` or `\u00XX`; U+2028 and U+2029 as `\u2028`/`\u2029` (so the output is
///   also safe to embed in JavaScript). Everything else, `/` and U+007F included, is raw UTF-8.
/// - Integers: plain decimal, `-9223372036854775808` included.
/// - Doubles: the shortest text that parses back to the identical `Double`, always with a
///   fraction or an exponent so it reads back as a double: `3.0`, `0.1`, `1e+16`, `5e-324`.
///   Zero (either sign) is written `0.0`. Non-finite values are a programming error.
public enum JSONWriter {
    /// Appends `null`.
    @inlinable
    public static func writeNull(into buffer: inout [UInt8]) {
        writeLiteral("null", into: &buffer)
    }

    /// Appends `true` or `false`.
    @inlinable
    public static func writeBool(_ value: Bool, into buffer: inout [UInt8]) {
        writeLiteral(value ? "true" : "false", into: &buffer)
    }

    /// Appends the bytes of a literal that is already JSON text (`","ok":true,"rev":`), with one
    /// copy. (Appending a `String`'s `utf8` view would take the generic sequence path, a byte at
    /// a time.)
    @inlinable
    public static func writeLiteral(_ text: StaticString, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `value` in decimal.
    public static func writeInt(_ value: Int64, into buffer: inout [UInt8]) {
        if value >= 0 && value < 10 {
            buffer.append(UInt8(truncatingIfNeeded: value) &+ UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        // 19 digits for |Int64.min| plus the sign.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var i = 20
            repeat {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                i -= 1
                digits[i] = UInt8(truncatingIfNeeded: remainder) &+ UInt8(ascii: "0")
                magnitude = quotient
            } while magnitude != 0
            if value < 0 {
                i -= 1
                digits[i] = UInt8(ascii: "-")
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    /// Appends the shortest round-trip text for `value`, always with a `.` or an exponent
    /// (`3.0`, `1e+16`); `0.0` for either zero.
    ///
    /// - Precondition: `value` is finite (JSON has no NaN or infinity).
    public static func writeDouble(_ value: Double, into buffer: inout [UInt8]) {
        precondition(value.isFinite, "JSON cannot represent the non-finite number \(value)")
        if value == 0 {
            writeLiteral("0.0", into: &buffer)
            return
        }
        // Swift's description is the shortest representation that round-trips, keeps `.0` on
        // integral values and uses `e+NN`/`e-NN` exponents: all valid JSON number syntax.
        var text = value.description
        text.withUTF8 { buffer.append(contentsOf: $0) }
    }

    /// Appends `string` quoted and escaped.
    public static func writeString(_ string: String, into buffer: inout [UInt8]) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            writeString(utf8: utf8, into: &buffer)
        }
        if done == nil {
            var copy = string
            copy.withUTF8 { writeString(utf8: $0, into: &buffer) }
        }
    }

    /// Appends `string` quoted and escaped.
    public static func writeString(_ string: Substring, into buffer: inout [UInt8]) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            writeString(utf8: utf8, into: &buffer)
        }
        if done == nil {
            var copy = string
            copy.withUTF8 { writeString(utf8: $0, into: &buffer) }
        }
    }

    /// Appends the string whose (valid) UTF-8 is `utf8`, quoted and escaped.
    public static func writeString(utf8: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]) {
        reserve(utf8.count + 2, in: &buffer)
        buffer.append(UInt8(ascii: "\""))
        writeStringContents(utf8: utf8, into: &buffer)
        buffer.append(UInt8(ascii: "\""))
    }

    /// Whether `writeStringContents` writes `utf8` as it is (no byte it escapes): then a caller
    /// may copy the bytes instead. Inlinable: it runs once per key of every logged path.
    @inlinable
    public static func writesAsIs(utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = utf8.count
        guard let base = utf8.baseAddress else { return true }
        var i = _JSONSWAR.skipPlainASCII(UnsafeRawPointer(base), from: 0, count: count)
        while i < count {
            let b = base[i]
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return false }
            // U+2028 / U+2029 (E2 80 A8 / E2 80 A9) are escaped, as `writeStringContents` does.
            if b == 0xE2 && i + 2 < count && base[i + 1] == 0x80 && (base[i + 2] | 1) == 0xA9 { return false }
            i += 1
        }
        return true
    }

    /// Appends the string whose (valid) UTF-8 is `utf8`, escaped but without its quotes (for a
    /// JSON string written in pieces, such as a path's keys).
    public static func writeStringContents(utf8: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]) {
        let count = utf8.count
        guard let base = utf8.baseAddress else { return }
        let raw = UnsafeRawPointer(base)
        var runStart = 0
        var i = 0
        while i < count {
            i = _JSONSWAR.skipPlainASCII(raw, from: i, count: count)
            if i >= count { break }
            let b = base[i]
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
                // U+2028 / U+2029 are E2 80 A8 / E2 80 A9.
                if b == 0xE2 && i + 2 < count && base[i + 1] == 0x80 && (base[i + 2] | 1) == 0xA9 {
                    flush(base, runStart, i, into: &buffer)
                    writeLiteral(base[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", into: &buffer)
                    i += 3
                    runStart = i
                } else {
                    i += 1
                }
                continue
            }
            flush(base, runStart, i, into: &buffer)
            switch b {
            case UInt8(ascii: "\""): writeLiteral("\\\"", into: &buffer)
            case UInt8(ascii: "\\"): writeLiteral("\\\\", into: &buffer)
            case 0x08: writeLiteral("\\b", into: &buffer)
            case 0x09: writeLiteral("\\t", into: &buffer)
            case 0x0A: writeLiteral("\\n", into: &buffer)
            case 0x0C: writeLiteral("\\f", into: &buffer)
            case 0x0D: writeLiteral("\\r", into: &buffer)
            default:
                writeLiteral("\\u00", into: &buffer)
                buffer.append(hexDigit(b >> 4))
                buffer.append(hexDigit(b & 0xF))
            }
            i += 1
            runStart = i
        }
        flush(base, runStart, count, into: &buffer)
    }

    // MARK: Helpers

    @inline(__always)
    static func flush(
        _ base: UnsafePointer<UInt8>, _ from: Int, _ to: Int, into buffer: inout [UInt8]
    ) {
        if from < to {
            buffer.append(contentsOf: UnsafeBufferPointer(start: base + from, count: to - from))
        }
    }

    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ UInt8(ascii: "0") : nibble &- 10 &+ UInt8(ascii: "a")
    }

    /// Grows `buffer` so that `extra` more bytes fit, keeping geometric growth (a plain
    /// `reserveCapacity(count + extra)` would reallocate to the exact size every time).
    @inline(__always)
    static func reserve(_ extra: Int, in buffer: inout [UInt8]) {
        let needed = buffer.count + extra
        if needed > buffer.capacity {
            buffer.reserveCapacity(Swift.max(needed, buffer.capacity * 2))
        }
    }
}

extension JSONValue {
    /// Appends this value as compact JSON (see `JSONWriter` for the exact output conventions).
    ///
    /// Recurses once per nesting level; values produced by `JSONParser` are bounded by
    /// `JSONLimits.maxDepth`.
    public func serialize(into buffer: inout [UInt8]) {
        switch self {
        case .null:
            JSONWriter.writeNull(into: &buffer)
        case .bool(let b):
            JSONWriter.writeBool(b, into: &buffer)
        case .int(let i):
            JSONWriter.writeInt(i, into: &buffer)
        case .double(let d):
            JSONWriter.writeDouble(d, into: &buffer)
        case .string(let s):
            JSONWriter.writeString(s, into: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                element.serialize(into: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            buffer.append(UInt8(ascii: "{"))
            var first = true
            for member in members {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                JSONWriter.writeString(member.key, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                member.value.serialize(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    /// This value as compact JSON bytes.
    public var serialized: [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64)
        serialize(into: &buffer)
        return buffer
    }

    /// This value as compact JSON text.
    public var jsonString: String {
        String(decoding: serialized, as: UTF8.self)
    }
}
