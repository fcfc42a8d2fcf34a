/// An error inside one expression, at a byte offset of the expression's UTF-8.
struct ExprError: Error, Sendable {
    var message: String
    var offset: Int
}

/// One token of a rule expression.
struct ExprToken: Sendable {
    enum Kind: Sendable, Equatable {
        case number(Double)
        case string(String)
        case identifier(String)
        case regex(pattern: String, flags: String)
        /// Operators and punctuation, by their text (`===`, `(`, `&&`…).
        case symbol(String)
        case end
    }

    var kind: Kind
    /// Byte offset of the token's first character in the expression.
    var offset: Int
}

/// Splits an expression (docs/rules.md, "Grammar") into tokens. A `/` starts a regex literal where an
/// operand is expected and is division after an operand, as in JavaScript.
struct ExprLexer {
    let bytes: [UInt8]
    var position = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    /// All tokens, the last one `.end`.
    mutating func tokens() throws(ExprError) -> [ExprToken] {
        var result: [ExprToken] = []
        while true {
            let afterOperand: Bool
            switch result.last?.kind {
            case .number?, .string?, .identifier?, .regex?: afterOperand = true
            case .symbol(let s)?: afterOperand = s == ")" || s == "]"
            default: afterOperand = false
            }
            let token = try next(afterOperand: afterOperand)
            result.append(token)
            if token.kind == .end { return result }
        }
    }

    private mutating func next(afterOperand: Bool) throws(ExprError) -> ExprToken {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C].contains(bytes[position]) {
            position += 1
        }
        let start = position
        guard position < bytes.count else { return ExprToken(kind: .end, offset: start) }
        let byte = bytes[position]
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            return ExprToken(kind: .number(try number()), offset: start)
        case UInt8(ascii: "."):
            if position + 1 < bytes.count, isDigit(bytes[position + 1]) {
                return ExprToken(kind: .number(try number()), offset: start)
            }
            position += 1
            return ExprToken(kind: .symbol("."), offset: start)
        case UInt8(ascii: "'"), UInt8(ascii: "\""):
            return ExprToken(kind: .string(try string(quote: byte)), offset: start)
        case UInt8(ascii: "/") where !afterOperand:
            return try regex()
        default:
            if isIdentifierStart(byte) {
                while position < bytes.count, isIdentifierPart(bytes[position]) { position += 1 }
                let name = String(decoding: bytes[start..<position], as: UTF8.self)
                return ExprToken(kind: .identifier(name), offset: start)
            }
            return ExprToken(kind: .symbol(try symbol()), offset: start)
        }
    }

    private mutating func symbol() throws(ExprError) -> String {
        let start = position
        for candidate in ["===", "!==", "==", "!=", "<=", ">=", "&&", "||"] {
            let utf8 = Array(candidate.utf8)
            if position + utf8.count <= bytes.count, bytes[position..<position + utf8.count].elementsEqual(utf8) {
                position += utf8.count
                return candidate
            }
        }
        let byte = bytes[position]
        let single = "()[].,?:!-+*/%<>"
        if byte < 0x80, single.utf8.contains(byte) {
            // `**`, `=`, `&`, `|` and friends are not in the language (docs/rules.md, "Grammar").
            if byte == UInt8(ascii: "*"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "*") {
                throw ExprError(message: "the operator ** is not supported", offset: start)
            }
            position += 1
            return String(decoding: [byte], as: UTF8.self)
        }
        let text = character(at: start)
        let reason: String
        switch text {
        case "=": reason = "assignment is not supported; use == or === to compare"
        case ";": reason = "a rule is one expression; ';' is not allowed"
        case "&", "|", "^", "~": reason = "bitwise operators are not supported"
        default: reason = "unexpected character \(quoted(text))"
        }
        throw ExprError(message: reason, offset: start)
    }

    /// The whole character (scalar) starting at `offset`, for messages.
    private func character(at offset: Int) -> String {
        var end = offset + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        return String(decoding: bytes[offset..<end], as: UTF8.self)
    }

    private mutating func number() throws(ExprError) -> Double {
        let start = position
        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            var p = position + 1
            if p < bytes.count, bytes[p] == UInt8(ascii: "+") || bytes[p] == UInt8(ascii: "-") { p += 1 }
            guard p < bytes.count, isDigit(bytes[p]) else {
                throw ExprError(message: "malformed number: missing exponent digits", offset: start)
            }
            position = p
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, isIdentifierPart(bytes[position]) {
            throw ExprError(message: "malformed number (only decimal numbers are supported)", offset: start)
        }
        var text = String(decoding: bytes[start..<position], as: UTF8.self)
        if text.hasPrefix(".") { text = "0" + text }
        if text.hasSuffix(".") { text += "0" }
        text = text.replacingDotBeforeExponent()
        guard let value = Double(text) else {
            throw ExprError(message: "malformed number", offset: start)
        }
        return value
    }

    private mutating func string(quote: UInt8) throws(ExprError) -> String {
        let start = position
        position += 1
        var out: [UInt8] = []
        while true {
            guard position < bytes.count else {
                throw ExprError(message: "unterminated string literal", offset: start)
            }
            let byte = bytes[position]
            if byte == quote {
                position += 1
                return String(decoding: out, as: UTF8.self)
            }
            if byte == 0x0A || byte == 0x0D {
                throw ExprError(message: "unterminated string literal (a line break inside it)", offset: start)
            }
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                position += 1
                continue
            }
            let escapeStart = position
            position += 1
            guard position < bytes.count else {
                throw ExprError(message: "unterminated string literal", offset: start)
            }
            let escaped = bytes[position]
            position += 1
            switch escaped {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0"): out.append(0x00)
            case UInt8(ascii: "x"):
                let value = try hexDigits(2, escapeStart: escapeStart)
                out.append(contentsOf: Array(String(Character(Unicode.Scalar(UInt8(value)))).utf8))
            case UInt8(ascii: "u"):
                var value = try hexDigits(4, escapeStart: escapeStart)
                if (0xD800..<0xDC00).contains(value), position + 6 <= bytes.count,
                    bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                {
                    position += 2
                    let low = try hexDigits(4, escapeStart: escapeStart)
                    guard (0xDC00..<0xE000).contains(low) else {
                        throw ExprError(message: "invalid surrogate pair in \\u escape", offset: escapeStart)
                    }
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(value) else {
                    throw ExprError(message: "a \\u escape names a lone surrogate", offset: escapeStart)
                }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                out.append(escaped)
            }
        }
    }

    private mutating func hexDigits(_ count: Int, escapeStart: Int) throws(ExprError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard position < bytes.count, let digit = hexValue(bytes[position]) else {
                throw ExprError(message: "malformed escape sequence", offset: escapeStart)
            }
            value = value * 16 + digit
            position += 1
        }
        return value
    }

    private mutating func regex() throws(ExprError) -> ExprToken {
        let start = position
        position += 1
        var inClass = false
        let patternStart = position
        while true {
            guard position < bytes.count, bytes[position] != 0x0A else {
                throw ExprError(message: "unterminated regular expression literal", offset: start)
            }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\\") {
                position += 2
                continue
            }
            if byte == UInt8(ascii: "[") { inClass = true }
            if byte == UInt8(ascii: "]") { inClass = false }
            if byte == UInt8(ascii: "/"), !inClass { break }
            position += 1
        }
        let pattern = String(decoding: bytes[patternStart..<position], as: UTF8.self)
        position += 1
        let flagsStart = position
        while position < bytes.count, isIdentifierPart(bytes[position]) { position += 1 }
        let flags = String(decoding: bytes[flagsStart..<position], as: UTF8.self)
        if pattern.isEmpty {
            throw ExprError(message: "empty regular expression literal", offset: start)
        }
        return ExprToken(kind: .regex(pattern: pattern, flags: flags), offset: start)
    }
}

private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

private func isIdentifierStart(_ b: UInt8) -> Bool {
    (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
        || b == UInt8(ascii: "_") || b == UInt8(ascii: "$")
}

private func isIdentifierPart(_ b: UInt8) -> Bool { isIdentifierStart(b) || isDigit(b) }

private func hexValue(_ b: UInt8) -> UInt32? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(b - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(b - UInt8(ascii: "a") + 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(b - UInt8(ascii: "A") + 10)
    default: return nil
    }
}

extension String {
    /// `1.e5` → `1.0e5`, which Swift's `Double(_:)` requires.
    fileprivate func replacingDotBeforeExponent() -> String {
        var out = ""
        var previous: Character?
        for c in self {
            if previous == ".", c == "e" || c == "E" { out.append("0") }
            out.append(c)
            previous = c
        }
        return out
    }
}
