// Bytes that both the structure (JSONByteParser.swift) and the strings (+Strings) look for.
let asciiQuote = UInt8(ascii: "\"")
let asciiBackslash = UInt8(ascii: "\\")

/// The parser state. Containers are handled with an explicit stack: `frames` holds one entry per
/// open array/object, and the children of every open container live at the end of the shared
/// `values`/`keys` stacks until the container closes and moves them into its own array.
struct _JSONByteParser {
    struct Frame {
        var isObject: Bool
        var valueStart: Int
        var keyStart: Int
    }

    let bytes: UnsafeRawBufferPointer
    let end: Int
    var pos = 0
    let maxDepth: Int
    let maxStringBytes: Int
    var frames: [Frame] = []
    /// `parseValue` returns a value once it completes the container at this depth (0: the
    /// document's value; 1: a member of the object `parseObjectMembers` reads).
    var floor = 0
    var values: [JSONValue] = []
    var keys: [String] = []
    /// Reused buffer for decoding strings that contain escapes.
    var scratch: [UInt8] = []
    /// Called with `pos` once it passes `nextProgress`, then every `progressStep` bytes.
    var progress: ((Int) -> Void)?
    var progressStep = Int.max
    var nextProgress = Int.max

    init(bytes: UnsafeRawBufferPointer, limits: JSONLimits) {
        self.bytes = bytes
        self.end = bytes.count
        self.maxDepth = limits.maxDepth
        self.maxStringBytes = limits.maxStringBytes
    }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        if pos < end { throw trailingGarbage(at: pos) }
        return value
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < end {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    /// Parses one value (with everything nested inside it) starting at `pos`, after optional
    /// whitespace.
    mutating func parseValue() throws(JSONError) -> JSONValue {
        var value: JSONValue
        outer: while true {
            skipWhitespace()
            guard pos < end else { throw unexpected(at: pos, expecting: "a value") }
            switch bytes[pos] {
            case asciiQuote:
                value = .string(try parseString())
            case UInt8(ascii: "{"):
                try openContainer(isObject: true)
                skipWhitespace()
                if pos < end && bytes[pos] == UInt8(ascii: "}") {
                    pos += 1
                    value = closeObject()
                } else {
                    try parseKeyAndColon()
                    continue outer
                }
            case UInt8(ascii: "["):
                try openContainer(isObject: false)
                skipWhitespace()
                if pos < end && bytes[pos] == UInt8(ascii: "]") {
                    pos += 1
                    value = closeArray()
                } else {
                    continue outer
                }
            case UInt8(ascii: "t"):
                try matchLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try matchLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try matchLiteral("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber()
            default:
                throw unexpected(at: pos, expecting: "a value")
            }

            // `value` is complete: add it to the enclosing container, closing every container
            // that ends right after it.
            while frames.count > floor, let frame = frames.last {
                values.append(value)
                skipWhitespace()
                guard pos < end else {
                    throw unexpected(at: pos, expecting: frame.isObject ? "',' or '}'" : "',' or ']'")
                }
                let c = bytes[pos]
                if c == UInt8(ascii: ",") {
                    pos += 1
                    if pos >= nextProgress, let progress {
                        progress(pos)
                        nextProgress = pos + progressStep
                    }
                    if frame.isObject {
                        skipWhitespace()
                        try parseKeyAndColon()
                    }
                    continue outer
                }
                if frame.isObject {
                    guard c == UInt8(ascii: "}") else {
                        throw unexpected(at: pos, expecting: "',' or '}'")
                    }
                    pos += 1
                    value = closeObject()
                } else {
                    guard c == UInt8(ascii: "]") else {
                        throw unexpected(at: pos, expecting: "',' or ']'")
                    }
                    pos += 1
                    value = closeArray()
                }
            }
            return value
        }
    }

    /// Reads a document that is an object member by member (`JSONParser.parseMembers`).
    mutating func parseObjectMembers(
        _ member: (UnsafeRawBufferPointer, consuming JSONMemberValue) -> Void
    )
        throws(JSONError) -> Bool
    {
        skipWhitespace()
        guard pos < end, bytes[pos] == UInt8(ascii: "{") else { return false }
        try openContainer(isObject: true)
        floor = 1
        var escapedKey: [UInt8] = []
        skipWhitespace()
        if pos < end && bytes[pos] == UInt8(ascii: "}") {
            pos += 1
        } else {
            while true {
                guard pos < end, bytes[pos] == asciiQuote else {
                    throw unexpected(at: pos, expecting: "a string key")
                }
                let key: Range<Int>?
                switch try scanString() {
                case .plain(let range): key = range
                case .escaped(let quote, let firstEscape):
                    _ = try parseEscapedString(quote: quote, firstEscape: firstEscape)
                    key = nil
                    // Decoded into `scratch`, which a value with escapes needs next.
                    swap(&scratch, &escapedKey)
                }
                skipWhitespace()
                guard pos < end, bytes[pos] == UInt8(ascii: ":") else {
                    throw unexpected(at: pos, expecting: "':'")
                }
                pos += 1
                skipWhitespace()
                let value: JSONMemberValue
                if pos < end, bytes[pos] == asciiQuote {
                    switch try scanString() {
                    case .plain(let range): value = .plainString(UnsafeRawBufferPointer(rebasing: bytes[range]))
                    case .escaped(let quote, let firstEscape):
                        value = .parsed(.string(try parseEscapedString(quote: quote, firstEscape: firstEscape)))
                    }
                } else {
                    value = .parsed(try parseValue())
                }
                if let key {
                    member(UnsafeRawBufferPointer(rebasing: bytes[key]), value)
                } else {
                    escapedKey.withUnsafeBytes { member($0, value) }
                }
                skipWhitespace()
                guard pos < end else { throw unexpected(at: pos, expecting: "',' or '}'") }
                if bytes[pos] == UInt8(ascii: ",") {
                    pos += 1
                    skipWhitespace()
                    continue
                }
                guard bytes[pos] == UInt8(ascii: "}") else { throw unexpected(at: pos, expecting: "',' or '}'") }
                pos += 1
                break
            }
        }
        frames.removeLast()
        floor = 0
        skipWhitespace()
        if pos < end { throw trailingGarbage(at: pos) }
        return true
    }

    /// Reads a document that is an array of `[string, value]` pairs (`JSONParser.parsePairs`).
    mutating func parsePairs(
        leading: (consuming JSONValue) -> Void, pair: (UnsafeRawBufferPointer, consuming JSONValue) -> Void
    ) throws(JSONError) -> Bool {
        skipWhitespace()
        guard pos < end, bytes[pos] == UInt8(ascii: "[") else { return false }
        try openContainer(isObject: false)
        skipWhitespace()
        if pos < end && bytes[pos] == UInt8(ascii: "]") {
            pos += 1
        } else {
            var first = true
            while true {
                skipWhitespace()
                if first, pos < end, bytes[pos] == UInt8(ascii: "{") {
                    floor = 1
                    leading(try parseValue())
                } else {
                    try parsePair(pair)
                }
                first = false
                skipWhitespace()
                guard pos < end else { throw unexpected(at: pos, expecting: "',' or ']'") }
                if bytes[pos] == UInt8(ascii: ",") {
                    pos += 1
                    continue
                }
                guard bytes[pos] == UInt8(ascii: "]") else { throw unexpected(at: pos, expecting: "',' or ']'") }
                pos += 1
                break
            }
        }
        frames.removeLast()
        floor = 0
        skipWhitespace()
        if pos < end { throw trailingGarbage(at: pos) }
        return true
    }

    /// One `[string, value]` element of `parsePairs`, at `pos`.
    private mutating func parsePair(_ pair: (UnsafeRawBufferPointer, consuming JSONValue) -> Void) throws(JSONError) {
        guard pos < end, bytes[pos] == UInt8(ascii: "[") else { throw unexpected(at: pos, expecting: "'['") }
        try openContainer(isObject: false)
        skipWhitespace()
        guard pos < end, bytes[pos] == asciiQuote else { throw unexpected(at: pos, expecting: "a string") }
        var string: Range<Int>?
        var escaped = ""  // the value may decode strings into `scratch` too
        switch try scanString() {
        case .plain(let range): string = range
        case .escaped(let quote, let firstEscape):
            escaped = try parseEscapedString(quote: quote, firstEscape: firstEscape)
        }
        skipWhitespace()
        guard pos < end, bytes[pos] == UInt8(ascii: ",") else { throw unexpected(at: pos, expecting: "','") }
        pos += 1
        floor = 2
        let value = try parseValue()
        skipWhitespace()
        guard pos < end, bytes[pos] == UInt8(ascii: "]") else { throw unexpected(at: pos, expecting: "']'") }
        pos += 1
        frames.removeLast()
        if let string {
            pair(UnsafeRawBufferPointer(rebasing: bytes[string]), value)
        } else {
            escaped.withUTF8 { pair(UnsafeRawBufferPointer($0), value) }
        }
    }

    // MARK: Containers

    @inline(__always)
    mutating func openContainer(isObject: Bool) throws(JSONError) {
        if frames.count >= maxDepth { throw tooDeep(at: pos) }
        if frames.isEmpty, values.capacity == 0 {
            // Room for a request envelope at once, rather than regrowing from one element.
            frames.reserveCapacity(4)
            values.reserveCapacity(8)
            keys.reserveCapacity(8)
        }
        frames.append(Frame(isObject: isObject, valueStart: values.count, keyStart: keys.count))
        pos += 1
    }

    /// Parses `"key"` and `:` (with whitespace before the colon) at `pos`; pushes the key.
    mutating func parseKeyAndColon() throws(JSONError) {
        guard pos < end, bytes[pos] == asciiQuote else {
            throw unexpected(at: pos, expecting: "a string key")
        }
        keys.append(try parseString())
        skipWhitespace()
        guard pos < end, bytes[pos] == UInt8(ascii: ":") else {
            throw unexpected(at: pos, expecting: "':'")
        }
        pos += 1
    }

    /// Pops the innermost frame (an array) and moves its elements out of `values`.
    mutating func closeArray() -> JSONValue {
        let frame = frames.removeLast()
        let start = frame.valueStart
        let n = values.count - start
        if n == 0 { return .array([]) }
        let elements = [JSONValue](unsafeUninitializedCapacity: n) { buffer, count in
            values.withUnsafeMutableBufferPointer { source in
                let from = source.baseAddress! + start
                buffer.baseAddress!.moveInitialize(from: from, count: n)
                // Leave trivially destroyable placeholders behind for `removeLast`.
                from.initialize(repeating: .null, count: n)
            }
            count = n
        }
        values.removeLast(n)
        return .array(elements)
    }

    /// Pops the innermost frame (an object) and moves its members out of `keys`/`values`.
    mutating func closeObject() -> JSONValue {
        let frame = frames.removeLast()
        let valueStart = frame.valueStart
        let keyStart = frame.keyStart
        let n = values.count - valueStart
        if n == 0 { return .object([]) }
        var members = [JSONMember]()
        members.reserveCapacity(n)
        for i in 0..<n {
            // Take each key and value out of its slot (no retain/release pair), leaving a
            // trivially destroyable placeholder for `removeLast`.
            var key = ""
            var value = JSONValue.null
            Swift.swap(&key, &keys[keyStart + i])
            Swift.swap(&value, &values[valueStart + i])
            members.append(JSONMember(key, value))
        }
        keys.removeLast(n)
        values.removeLast(n)
        return .object(members)
    }

    // MARK: Literals

    @inline(__always)
    mutating func matchLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        let text = literal.utf8Start
        for i in 0..<count {
            guard pos + i < end, bytes[pos + i] == text[i] else {
                throw unexpected(at: pos + i, expecting: "'\(literal)'")
            }
        }
        pos += count
    }
}
