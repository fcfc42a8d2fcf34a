internal import HearthCore

internal import HearthJSON

/// The server's databases (docs/client.md "Choosing a database"): the admin calls that list,
/// create, inspect and delete them. They are answered on any connection, whatever database it
/// uses; a server with rules requires an admin connection (`permission_denied` otherwise).
extension Database {
    /// Every database of the server, sorted by name with the default one first.
    public func listDatabases() async throws -> [DatabaseInfo] {
        let response = try await databaseRequest([JSONMember("op", .string("listDatabases"))])
        guard case .array(let list)? = response["databases"] else {
            throw HearthError(.internal, "the server's listDatabases answer has no databases")
        }
        return list.map(DatabaseInfo.init(wire:))
    }

    /// Creates the database `name`, empty; `bad_request` when it exists already or the name
    /// breaks the naming rule (checked before sending), `overloaded` when the server holds its
    /// `maxDatabases`.
    public func createDatabase(_ name: String) async throws -> DatabaseInfo {
        try DatabaseName.validate(name)
        let response = try await databaseRequest([
            JSONMember("op", .string("createDatabase")), JSONMember("db", .string(name)),
        ])
        return try Self.info(in: response, of: "createDatabase")
    }

    /// What the server knows of the database `name`; `not_found` when there is none.
    public func databaseInfo(_ name: String) async throws -> DatabaseInfo {
        try DatabaseName.validate(name)
        let response = try await databaseRequest([
            JSONMember("op", .string("databaseInfo")), JSONMember("db", .string(name)),
        ])
        return try Self.info(in: response, of: "databaseInfo")
    }

    /// Deletes the database `name`: its files move to the data directory's `trash/` (the answer's
    /// `movedTo`), or with `purge` are removed for good. The default database cannot be deleted
    /// (`bad_request`); `not_found` when there is no such database. Not sent again after a lost
    /// connection (the name may have been recreated meanwhile): it then fails with
    /// `unavailable`, "outcome unknown" — look at `listDatabases()`.
    public func deleteDatabase(_ name: String, purge: Bool = false) async throws -> DatabaseDeletion {
        try DatabaseName.validate(name)
        let response = try await databaseRequest(
            [
                JSONMember("op", .string("deleteDatabase")), JSONMember("db", .string(name)),
                JSONMember("purge", .bool(purge)),
            ], resendable: false)
        return DatabaseDeletion(response: response, name: name)
    }

    private func databaseRequest(_ body: [JSONMember], resendable: Bool = true) async throws -> JSONValue {
        let repo = self.repo
        return try await withCheckedThrowingContinuation { continuation in
            repo.request(body, resendable: resendable) { continuation.resume(with: $0) }
        }
    }

    private static func info(in response: JSONValue, of op: String) throws(HearthError) -> DatabaseInfo {
        guard let database = response["database"], case .object = database else {
            throw HearthError(.internal, "the server's \(op) answer has no database")
        }
        return DatabaseInfo(wire: database)
    }
}
