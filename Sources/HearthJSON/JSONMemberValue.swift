/// A member's value as `JSONParser.parseMembers` hands it over: parsed, or, for a string without
/// escapes, its UTF-8 where it stands in the document (valid only during the call, like the
/// member's key). A caller that recognises the bytes (an operation's name, a path it has seen)
/// so makes no `String` for them; `json` makes the value the document holds.
public enum JSONMemberValue {
    case parsed(JSONValue)
    /// The bytes between the quotes of a string without escapes (already validated UTF-8).
    case plainString(UnsafeRawBufferPointer)

    /// The value, as `JSONParser.parse` would have made it.
    public var json: JSONValue {
        switch self {
        case .parsed(let value): return value
        case .plainString(let bytes): return .string(String(decoding: bytes, as: UTF8.self))
        }
    }
}
