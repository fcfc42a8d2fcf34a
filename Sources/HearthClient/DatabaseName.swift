/// The names of a server's databases (docs/PROTOCOL.md): 1 to 63 lowercase letters a–z, digits
/// and hyphens, not starting or ending with a hyphen — a DNS label, so that `<name>.<host>` is a
/// host name too. The client checks a name before sending it, with the server's words.
enum DatabaseName {
    /// The rule, as the server states it in its `bad_request`.
    static let rule = "a name is 1–63 lowercase letters, digits and hyphens, not starting or ending with a hyphen"

    /// Throws `bad_request` ("invalid database name …") for a name that breaks the rule.
    static func validate(_ name: String) throws(HearthError) {
        guard isValid(name) else {
            throw HearthError(.badRequest, "invalid database name \"\(name)\": \(rule)")
        }
    }

    /// Whether `name` follows the rule.
    static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...63).contains(bytes.count), bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-")
        else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-")
        }
    }
}

extension Database {
    /// Checks a database name before it is used in a URL or an admin call: throws `bad_request`
    /// ("invalid database name \"X\": a name is 1–63 lowercase letters, digits and hyphens, not
    /// starting or ending with a hyphen") when it is not one the server accepts.
    public static func validateDatabaseName(_ name: String) throws(HearthError) {
        try DatabaseName.validate(name)
    }
}
