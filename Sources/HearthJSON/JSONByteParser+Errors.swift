/// The parser's errors, built out of line so that the paths that throw them stay small.
extension _JSONByteParser {
    @inline(never)
    func unexpected(at offset: Int, expecting: String) -> JSONError {
        if offset >= end {
            return JSONError(
                kind: .syntax, offset: offset,
                message: "unexpected end of input at byte \(offset) (expected \(expecting))")
        }
        return JSONError(
            kind: .syntax, offset: offset,
            message: "unexpected \(JSONError.describeByte(bytes[offset])) at byte \(offset) (expected \(expecting))")
    }

    @inline(never)
    func trailingGarbage(at offset: Int) -> JSONError {
        JSONError(
            kind: .syntax, offset: offset,
            message:
                "unexpected \(JSONError.describeByte(bytes[offset])) at byte \(offset) after the end of the JSON value (trailing garbage)"
        )
    }

    @inline(never)
    func leadingZero(at offset: Int) -> JSONError {
        JSONError(
            kind: .syntax, offset: offset,
            message: "unexpected digit after a leading zero at byte \(offset) (leading zeros are not allowed)")
    }

    @inline(never)
    func controlCharacter(at offset: Int) -> JSONError {
        JSONError(
            kind: .syntax, offset: offset,
            message: "unescaped control character 0x\(JSONError.hex2(bytes[offset])) in string at byte \(offset)")
    }

    @inline(never)
    func invalidEscape(at offset: Int) -> JSONError {
        let what = offset + 1 < end ? JSONError.describeByte(bytes[offset + 1]) : "end of input"
        return JSONError(
            kind: .syntax, offset: offset,
            message: "invalid escape sequence (backslash followed by \(what)) at byte \(offset)")
    }

    @inline(never)
    func loneSurrogate(at offset: Int, unit: UInt32) -> JSONError {
        let hex = JSONError.hex2(UInt8(unit >> 8)) + JSONError.hex2(UInt8(unit & 0xFF))
        return JSONError(kind: .syntax, offset: offset, message: "lone surrogate escape \\u\(hex) at byte \(offset)")
    }

    @inline(never)
    func invalidUTF8(at offset: Int) -> JSONError {
        JSONError(kind: .invalidUTF8, offset: offset, message: "invalid UTF-8 sequence starting at byte \(offset)")
    }

    @inline(never)
    func tooDeep(at offset: Int) -> JSONError {
        JSONError(
            kind: .tooDeep, offset: offset,
            message: "nesting deeper than the limit of \(maxDepth) at byte \(offset)")
    }

    @inline(never)
    func stringTooLong(at offset: Int) -> JSONError {
        JSONError(
            kind: .stringTooLong, offset: offset,
            message: "string starting at byte \(offset) is longer than the limit of \(maxStringBytes) bytes")
    }

    @inline(never)
    func numberOutOfRange(at offset: Int) -> JSONError {
        JSONError(kind: .numberOutOfRange, offset: offset, message: "number at byte \(offset) is out of range")
    }
}
