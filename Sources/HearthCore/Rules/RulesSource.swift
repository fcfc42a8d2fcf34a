import HearthJSON

/// A JSON value of the rules file with the byte offset where it starts, so that load errors can
/// name a line and column.
struct SourceValue: Sendable {
    enum Kind: Sendable {
        case null
        case bool(Bool)
        case number(Double)
        /// A string with the offset of its opening quote in `offset`.
        case string(String)
        case array([SourceValue])
        case object([SourceMember])
    }

    var kind: Kind
    var offset: Int

    /// The plain JSON value.
    var json: JSONValue {
        switch kind {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let n): return n.rounded() == n && abs(n) < 9e15 ? .int(Int64(n)) : .double(n)
        case .string(let s): return .string(s)
        case .array(let items): return .array(items.map(\.json))
        case .object(let members): return .object(members.map { JSONMember($0.key, $0.value.json) })
        }
    }
}

struct SourceMember: Sendable {
    var key: String
    var keyOffset: Int
    var value: SourceValue
}

/// Parses the rules file: JSON (RFC 8259) plus `//` and `/* */` comments wherever whitespace is
/// allowed (docs/rules.md, "Checks at load"). Raw line breaks inside strings are refused, as in JSON.
/// Errors are `RulesError`s with the line and column of the problem.
struct RulesSourceParser {
    let bytes: [UInt8]
    private var position = 0
    private var depth = 0
    /// Whether a `//` comment ran to the end of the text: everything after it was swallowed,
    /// which is what a file sent without its line breaks (`curl -d @rules.json`) looks like.
    private var lineCommentReachedEnd = false

    /// Nesting deeper than this is refused (rule nodes are limited to far less).
    static let maxNesting = 128

    init(_ text: String) { bytes = Array(text.utf8) }

    mutating func parse() throws(RulesError) -> SourceValue {
        try skipSpace()
        let value = try parseValue()
        try skipSpace()
        guard position == bytes.count else { throw error("unexpected text after the JSON document") }
        return value
    }

    /// An error at `offset` (the current position by default). When a `//` comment swallowed
    /// the rest of the text, the error says so: the line breaks were probably lost on the way.
    func error(_ reason: String, at offset: Int? = nil) -> RulesError {
        let (line, column) = SourcePosition.lineAndColumn(of: offset ?? position, in: bytes)
        var text = "invalid JSON: " + reason
        if lineCommentReachedEnd {
            text +=
                " (a // comment runs to the end of the text: were its line breaks lost? curl -d strips them;"
                + " send the file with curl --data-binary @rules.json, or use hearth rules set)"
        }
        return RulesError(text, line: line, column: column)
    }

    private mutating func skipSpace() throws(RulesError) {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            case UInt8(ascii: "/"):
                let start = position
                guard position + 1 < bytes.count else { throw error("unexpected '/'") }
                if bytes[position + 1] == UInt8(ascii: "/") {
                    while position < bytes.count, bytes[position] != 0x0A { position += 1 }
                    if position == bytes.count { lineCommentReachedEnd = true }
                } else if bytes[position + 1] == UInt8(ascii: "*") {
                    position += 2
                    while true {
                        guard position + 1 < bytes.count else { throw error("unterminated /* comment", at: start) }
                        if bytes[position] == UInt8(ascii: "*"), bytes[position + 1] == UInt8(ascii: "/") {
                            position += 2
                            break
                        }
                        position += 1
                    }
                } else {
                    throw error("unexpected '/'")
                }
            default: return
            }
        }
    }

    private mutating func parseValue() throws(RulesError) -> SourceValue {
        guard position < bytes.count else { throw error("unexpected end of the file") }
        let start = position
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return SourceValue(kind: .string(try parseString()), offset: start)
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: String, _ kind: SourceValue.Kind) throws(RulesError) -> SourceValue {
        let start = position
        let utf8 = Array(word.utf8)
        guard position + utf8.count <= bytes.count, bytes[position..<position + utf8.count].elementsEqual(utf8) else {
            throw error("unexpected character")
        }
        position += utf8.count
        return SourceValue(kind: kind, offset: start)
    }

    private mutating func nest() throws(RulesError) {
        depth += 1
        if depth > Self.maxNesting { throw error("the document is nested too deeply") }
    }

    private mutating func parseObject() throws(RulesError) -> SourceValue {
        let start = position
        try nest()
        defer { depth -= 1 }
        position += 1
        var members: [SourceMember] = []
        try skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return SourceValue(kind: .object(members), offset: start)
        }
        while true {
            try skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a member name in double quotes")
            }
            let keyOffset = position
            let key = try parseString()
            try skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after a member name")
            }
            position += 1
            try skipSpace()
            let value = try parseValue()
            members.append(SourceMember(key: key, keyOffset: keyOffset, value: value))
            try skipSpace()
            guard position < bytes.count else { throw error("unterminated object") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else { throw error("expected ',' or '}' in an object") }
            position += 1
            return SourceValue(kind: .object(members), offset: start)
        }
    }

    private mutating func parseArray() throws(RulesError) -> SourceValue {
        let start = position
        try nest()
        defer { depth -= 1 }
        position += 1
        var items: [SourceValue] = []
        try skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return SourceValue(kind: .array(items), offset: start)
        }
        while true {
            try skipSpace()
            items.append(try parseValue())
            try skipSpace()
            guard position < bytes.count else { throw error("unterminated array") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else { throw error("expected ',' or ']' in an array") }
            position += 1
            return SourceValue(kind: .array(items), offset: start)
        }
    }

    private mutating func parseNumber() throws(RulesError) -> SourceValue {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        let allowed = Array("0123456789.eE+-".utf8)
        while position < bytes.count, allowed.contains(bytes[position]) { position += 1 }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), (try? JSONParser.parse(text)) != nil else {
            throw error("malformed number", at: start)
        }
        return SourceValue(kind: .number(value), offset: start)
    }

    /// Decodes the string at `position` (its opening quote) with JSON's escapes.
    private mutating func parseString() throws(RulesError) -> String {
        let start = position
        var cursor = SourceString(bytes: bytes, quote: start)
        var out: [UInt8] = []
        while true {
            switch cursor.next() {
            case .byte(let b): out.append(b)
            case .scalar(let s): out.append(contentsOf: Array(String(Character(s)).utf8))
            case .end:
                position = cursor.position
                return String(decoding: out, as: UTF8.self)
            case .failure(let reason, let offset): throw error(reason, at: offset)
            }
        }
    }
}
