internal import HearthJSON

/// The answer of `Database.deleteDatabase(_:purge:)`: where the deleted database's data went.
public struct DatabaseDeletion: Sendable, Equatable {
    /// The deleted database's name.
    public let name: String
    /// The folder on the server its files were moved to (under the data directory's `trash/`);
    /// nil when they were purged.
    public let movedTo: String?
    /// Whether its files were removed for good (`purge: true`).
    public let purged: Bool

    public init(name: String, movedTo: String?, purged: Bool) {
        self.name = name
        self.movedTo = movedTo
        self.purged = purged
    }

    init(response: JSONValue, name: String) {
        self.init(
            name: response["deleted"]?.stringValue ?? name, movedTo: response["movedTo"]?.stringValue,
            purged: response["purged"]?.boolValue ?? false)
    }
}
