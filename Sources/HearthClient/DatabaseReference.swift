internal import HearthCore

/// A location in the database: read and observe it (it is a query), write it, and navigate.
///
/// `@unchecked Sendable` for the reason given on `DatabaseQuery`: all stored state is immutable.
public final class DatabaseReference: DatabaseQuery, CustomStringConvertible, @unchecked Sendable {
    /// The last segment as given, kept for an invalid path's `key`.
    private let invalidKey: String?

    init(database: Database, path: Path, pathError: HearthError?, invalidKey: String? = nil) {
        self.invalidKey = invalidKey
        super.init(database: database, path: path, pathError: pathError, params: .default)
    }

    /// The last key of the location; `nil` at the root.
    public var key: String? { invalidKey ?? path.last?.string }

    /// The parent location; `nil` at the root.
    public var parent: DatabaseReference? {
        guard pathError == nil, let parent = path.parent else { return nil }
        return DatabaseReference(database: database, path: parent, pathError: nil)
    }

    /// The root of the database.
    public var root: DatabaseReference { database.reference() }

    /// `hearth://host:port/the/path`, with `?ns=name` after the path when the database's URL
    /// names one (`hearth://host:port/the/path?ns=shop`).
    public var url: String {
        let url = database.repo.url
        guard let name = url.databaseName else { return url.base + (path.isRoot ? "" : path.description) }
        return url.base + path.description + "?ns=\(name)"
    }

    public var description: String { url }

    /// The location at `pathString` below this one (slashes allowed: `"users/ada/name"`).
    /// An invalid path gives a reference whose every operation fails with `invalid_path`.
    public func child(_ pathString: String) -> DatabaseReference {
        if let pathError {
            return DatabaseReference(database: database, path: path, pathError: pathError, invalidKey: invalidKey)
        }
        do {
            let relative = try Path.parse(pathString, allowInfo: path.isRoot)
            return DatabaseReference(database: database, path: path.appending(relative), pathError: nil)
        } catch {
            let last = pathString.split(separator: "/").last.map(String.init) ?? pathString
            return DatabaseReference(
                database: database, path: path, pathError: HearthError(error), invalidKey: last)
        }
    }

    func child(_ key: Key) -> DatabaseReference {
        DatabaseReference(database: database, path: path.appending(key), pathError: pathError)
    }

    /// A child with a new push id (docs/PROTOCOL.md, "push"): chronological, made on the client from its
    /// clock corrected by `.info/serverTimeOffset`. Nothing is written until you write it.
    public func childByAutoId() -> DatabaseReference {
        child(Key(repo.nextPushID()))
    }
}
