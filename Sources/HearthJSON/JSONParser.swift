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
