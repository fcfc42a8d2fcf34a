/// Resource limits applied while parsing.
public struct JSONLimits: Sendable, Equatable {
    /// The deepest nesting of arrays and objects accepted; a top-level container is depth 1, so
    /// `[[1]]` has depth 2. A document nested deeper is rejected with `.tooDeep`. Scalars do not
    /// count. `0` accepts only scalar documents.
    public var maxDepth: Int
    /// The longest string (object keys included) accepted, measured in bytes of its decoded UTF-8
    /// (after escapes are resolved). A longer string is rejected with `.stringTooLong`.
    public var maxStringBytes: Int

    public init(maxDepth: Int = 512, maxStringBytes: Int = .max) {
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
    }

    /// `maxDepth` 512, no string length limit.
    public static let `default` = JSONLimits()
}

/// A strict RFC 8259 JSON parser working directly on UTF-8 bytes.
///
/// - Whitespace (space, tab, LF, CR) is allowed around every token; anything else after the
///   document's value is an error ("trailing garbage"). Any value may be the document's value.
/// - Objects keep their members in document order, duplicates included.
/// - A number without fraction or exponent that fits `Int64` becomes `.int` (exactly); any other
///   number becomes `.double` (correctly rounded). A number whose magnitude rounds to infinity is
///   rejected with `.numberOutOfRange`; one that underflows becomes `0.0`. Negative zero is never
///   produced (`-0` → `.int(0)`, `-0.0`/`-0e5`/`-1e-400` → `.double(0.0)`).
/// - Strings must be valid UTF-8 (`.invalidUTF8` otherwise) with no raw control characters;
///   `\uXXXX` surrogate pairs are combined and lone surrogate escapes are rejected.
/// - The parser is iterative: nesting depth is bounded by `JSONLimits.maxDepth` only, never by
///   the call stack.
///
/// All errors are `JSONError`s carrying the byte offset of the problem.
public enum JSONParser {
    /// Parses one JSON document from `bytes`.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default
    ) throws(JSONError) -> JSONValue {
        var parser = _JSONByteParser(bytes: bytes, limits: limits)
        return try parser.parseDocument()
    }

    /// Parses one JSON document from `bytes`.
    public static func parse(
        _ bytes: [UInt8], limits: JSONLimits = .default
    ) throws(JSONError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) -> JSONValue in try parse(raw, limits: limits) }
        }
        return try result.get()
    }

    /// Parses one JSON document from `bytes`, calling `progress` with the number of bytes parsed
    /// so far about every `step` bytes (for long documents: a 30 MB file takes seconds).
    public static func parse(
        _ bytes: [UInt8], limits: JSONLimits = .default, every step: Int = 1 << 20, progress: (Int) -> Void
    ) throws(JSONError) -> JSONValue {
        try withoutActuallyEscaping(progress) { progress throws(JSONError) -> JSONValue in
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(JSONError) -> JSONValue in
                    var parser = _JSONByteParser(bytes: raw, limits: limits)
                    parser.progress = progress
                    parser.progressStep = max(step, 1)
                    parser.nextProgress = max(step, 1)
                    return try parser.parseDocument()
                }
            }
            return try result.get()
        }
    }

    /// Parses one JSON document from `bytes`. Error offsets are relative to the slice's start.
    public static func parse(
        _ bytes: ArraySlice<UInt8>, limits: JSONLimits = .default
    ) throws(JSONError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) -> JSONValue in try parse(raw, limits: limits) }
        }
        return try result.get()
    }

    /// Parses one JSON document, with the parser's working stacks taken from `workspace` and
    /// given back to it: a caller that parses many small documents (a connection, one request
    /// line after another) then allocates only each document's own values.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default, reusing workspace: inout JSONParseWorkspace
    ) throws(JSONError) -> JSONValue {
        var parser = _JSONByteParser(bytes: bytes, limits: limits)
        workspace.lend(to: &parser)
        defer { workspace.takeBack(from: &parser) }
        return try parser.parseDocument()
    }

    /// Parses one JSON document that is an object without building it: each member is handed
    /// to `member`, in document order (duplicates included), as its key's UTF-8 (escapes
    /// resolved; valid only during the call) and its value (a string without escapes as its
    /// bytes, `JSONMemberValue`). A caller that looks members up by name (a request's envelope)
    /// so makes no string per key, no array of members, and no string it does not need. Errors,
    /// limits and offsets are those of `parse`: the object counts as depth 1. Returns false,
    /// having called nothing, when the document does not start with `{` (after whitespace); the
    /// caller then parses it whole to learn what it is.
    public static func parseMembers(
        of bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default, reusing workspace: inout JSONParseWorkspace,
        _ member: (UnsafeRawBufferPointer, consuming JSONMemberValue) -> Void
    ) throws(JSONError) -> Bool {
        var parser = _JSONByteParser(bytes: bytes, limits: limits)
        workspace.lend(to: &parser)
        defer { workspace.takeBack(from: &parser) }
        return try parser.parseObjectMembers(member)
    }

    /// Parses one JSON document that is an array of `[string, value]` pairs without building the
    /// array or the pairs (a write-ahead log record's payload): each pair is handed to `pair`, in
    /// order, as its string's UTF-8 (escapes resolved; valid only during the call) and its value.
    /// The first element may instead be an object, handed to `leading`. Errors, limits and offsets
    /// are those of `parse` (the array counts as depth 1, a pair as depth 2). Returns false, having
    /// called nothing, when the document does not start with `[` (after whitespace).
    public static func parsePairs(
        of bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default, reusing workspace: inout JSONParseWorkspace,
        leading: (consuming JSONValue) -> Void, pair: (UnsafeRawBufferPointer, consuming JSONValue) -> Void
    ) throws(JSONError) -> Bool {
        var parser = _JSONByteParser(bytes: bytes, limits: limits)
        workspace.lend(to: &parser)
        defer { workspace.takeBack(from: &parser) }
        return try parser.parsePairs(leading: leading, pair: pair)
    }

    /// Parses one JSON document from the UTF-8 of `text`.
    public static func parse(
        _ text: String, limits: JSONLimits = .default
    ) throws(JSONError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(JSONError) -> JSONValue in
                try parse(UnsafeRawBufferPointer(utf8), limits: limits)
            }
        }
        return try result.get()
    }
}

/// The working stacks of a parser, kept between documents (`JSONParser.parse(_:limits:reusing:)`).
/// Empty between parses; stacks grown past a small bound by a large document are dropped rather
/// than kept.
public struct JSONParseWorkspace {
    var frames: [_JSONByteParser.Frame] = []
    var values: [JSONValue] = []
    var keys: [String] = []

    public init() {}

    /// Gives the parser the stacks (`takeBack` takes them back).
    mutating func lend(to parser: inout _JSONByteParser) {
        swap(&parser.frames, &frames)
        swap(&parser.values, &values)
        swap(&parser.keys, &keys)
    }

    /// Takes the parser's stacks back, emptied (a document that failed leaves values behind).
    mutating func takeBack(from parser: inout _JSONByteParser) {
        swap(&frames, &parser.frames)
        swap(&values, &parser.values)
        swap(&keys, &parser.keys)
        let bound = 64
        // (Most documents leave the stacks empty: nothing to clear then.)
        if frames.capacity > bound { frames = [] } else if !frames.isEmpty { frames.removeAll(keepingCapacity: true) }
        if values.capacity > bound { values = [] } else if !values.isEmpty { values.removeAll(keepingCapacity: true) }
        if keys.capacity > bound { keys = [] } else if !keys.isEmpty { keys.removeAll(keepingCapacity: true) }
    }
}

// MARK: - Implementation

private let asciiQuote = UInt8(ascii: "\"")
private let asciiBackslash = UInt8(ascii: "\\")

/// Exact powers of ten for the fast number path (every one is exactly representable).
private let exactPowersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

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

    // MARK: Strings

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

    // MARK: Numbers

    @inline(__always)
    func isDigit(_ j: Int) -> Bool {
        j < end && bytes[j] &- UInt8(ascii: "0") < 10
    }

    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = pos
        var i = pos
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }

        // All digits of the integer and fraction parts, while they fit.
        var mantissa: UInt64 = 0
        var mantissaOverflowed = false

        guard isDigit(i) else { throw unexpected(at: i, expecting: "a digit") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { throw leadingZero(at: i) }
        } else {
            while isDigit(i) {
                accumulate(&mantissa, &mantissaOverflowed, bytes[i])
                i += 1
            }
        }

        var isInteger = true
        var fractionDigits = 0
        if i < end && bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard isDigit(i) else { throw unexpected(at: i, expecting: "a digit") }
            while isDigit(i) {
                accumulate(&mantissa, &mantissaOverflowed, bytes[i])
                fractionDigits += 1
                i += 1
            }
        }

        var exponent = 0
        if i < end && (bytes[i] | 0x20) == UInt8(ascii: "e") {
            isInteger = false
            i += 1
            var exponentNegative = false
            if i < end && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) {
                exponentNegative = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            guard isDigit(i) else { throw unexpected(at: i, expecting: "a digit") }
            while isDigit(i) {
                // Saturate: anything this large takes the slow path anyway.
                if exponent < 1_000_000 { exponent = exponent * 10 + Int(bytes[i] &- UInt8(ascii: "0")) }
                i += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        pos = i

        if isInteger && !mantissaOverflowed {
            if negative {
                if mantissa <= UInt64(1) << 63 { return .int(Int64(bitPattern: 0 &- mantissa)) }
            } else if mantissa <= UInt64(Int64.max) {
                return .int(Int64(mantissa))
            }
        }

        var d: Double
        let exponent10 = exponent - fractionDigits
        if !mantissaOverflowed && mantissa <= UInt64(1) << 53 && exponent10 >= -22 && exponent10 <= 22 {
            // Clinger's fast path: both operands are exact, so one IEEE operation rounds correctly.
            d = Double(mantissa)
            if exponent10 >= 0 {
                d *= exactPowersOfTen[exponent10]
            } else {
                d /= exactPowersOfTen[-exponent10]
            }
            if negative { d = -d }
        } else {
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            // The text matches the JSON number grammar, which `Double.init` always accepts.
            d = Double(text) ?? .nan
            guard d.isFinite else { throw numberOutOfRange(at: start) }
        }
        if d == 0 { d = 0 }  // no negative zero
        return .double(d)
    }

    @inline(__always)
    func accumulate(_ mantissa: inout UInt64, _ overflowed: inout Bool, _ digit: UInt8) {
        if overflowed { return }
        let (times10, o1) = mantissa.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(UInt64(digit &- UInt8(ascii: "0")))
        if o1 || o2 { overflowed = true } else { mantissa = sum }
    }

    // MARK: Errors (kept out of line)

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
    /// caller looks at those one by one: gathering them into a word cost more, measured).
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
