internal import HearthCore

extension DatabaseName {
    /// Throws `bad_request` ("invalid database name …", with the rule) for a name the server
    /// would refuse, before it is sent.
    static func validate(_ name: String) throws(HearthError) {
        do { _ = try DatabaseName(name) } catch { throw HearthError(error) }
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
