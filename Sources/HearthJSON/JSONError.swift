/// Why a JSON text was rejected, and where.
///
/// `offset` is the zero-based byte offset into the parsed input at which the problem was found:
///
/// - an unexpected byte (including trailing garbage after the value): the offset of that byte;
/// - input that ends too early: the input's length;
/// - an invalid escape or a lone/mismatched surrogate escape: the offset of its backslash;
/// - invalid UTF-8 inside a string: the offset of the first byte of the invalid sequence;
/// - a number that is malformed: the offset of the byte where the grammar was violated;
/// - a number out of range: the offset of the number's first byte;
/// - a string that is too long: the offset of its opening quote;
/// - nesting that is too deep: the offset of the `[` or `{` that went past the limit.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The category of a JSON error.
    public enum Kind: Sendable, Equatable, Hashable, CustomStringConvertible {
        /// The text does not follow the RFC 8259 grammar.
        case syntax
        /// A string contains bytes that are not valid UTF-8.
        case invalidUTF8
        /// Arrays and objects are nested deeper than `JSONLimits.maxDepth`.
        case tooDeep
        /// A string's decoded UTF-8 is longer than `JSONLimits.maxStringBytes`.
        case stringTooLong
        /// A number's magnitude is too large to be represented as a finite `Double`.
        case numberOutOfRange

        public var description: String {
            switch self {
            case .syntax: return "syntax"
            case .invalidUTF8: return "invalidUTF8"
            case .tooDeep: return "tooDeep"
            case .stringTooLong: return "stringTooLong"
            case .numberOutOfRange: return "numberOutOfRange"
            }
        }
    }

    /// The category of the error.
    public let kind: Kind
    /// Zero-based byte offset into the input where the problem is (see the type's documentation).
    public let offset: Int
    /// A human-readable sentence that includes the byte offset, e.g.
    /// `unexpected character 'x' at byte 12`.
    public let message: String

    public init(kind: Kind, offset: Int, message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    public var description: String { message }
}

extension JSONError {
    /// Describes the byte at `offset` for a message: `character 'x'` or `byte 0x01`.
    static func describeByte(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte <= 0x7E {
            return "character '\(Character(Unicode.Scalar(byte)))'"
        }
        if byte == 0x20 { return "character ' '" }
        return "byte 0x" + hex2(byte)
    }

    static func hex2(_ byte: UInt8) -> String {
        let digits: [Character] = [
            "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F",
        ]
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}
