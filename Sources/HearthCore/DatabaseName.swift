/// The name of one of a daemon's databases: 1–63 lowercase letters, digits and hyphens, not
/// starting or ending with a hyphen. That is a DNS label, so a name also works as the first
/// label of a host (`shop.localhost`), and it is safe as a folder name.
public struct DatabaseName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let text: String

    /// The pattern, as errors and documents state it.
    public static let rule =
        "a name is 1–63 lowercase letters, digits and hyphens, not starting or ending with a hyphen"

    /// Validates `text`; the error names the rule.
    public init(_ text: String) throws(DatabaseError) {
        guard Self.isValid(text) else {
            let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
            throw DatabaseError(.badRequest, "invalid database name \"\(shown)\": \(Self.rule)")
        }
        self.text = text
    }

    /// Whether `text` follows the rule.
    public static func isValid(_ text: String) -> Bool {
        let bytes = text.utf8
        guard (1...63).contains(bytes.count), bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-")
        else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-")
        }
    }

    public var description: String { text }

    public static func < (lhs: DatabaseName, rhs: DatabaseName) -> Bool { lhs.text < rhs.text }
}
