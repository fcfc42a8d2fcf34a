import HearthCore
import HearthStorage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where each database keeps its files: the default database in the data directory itself (the
/// layout of a daemon with one database, opened in place), every other one in
/// `databases/<name>/`, and deleted ones in `trash/<name>-<UTC time>/` until the retention ends.
struct DatabaseLayout: Sendable {
    let dataDirectory: String
    let defaultName: String

    var databasesFolder: String { join(dataDirectory, "databases") }
    var trashFolder: String { join(dataDirectory, "trash") }

    /// The folder of database `name`.
    func directory(of name: DatabaseName) -> String {
        name.text == defaultName ? dataDirectory : join(databasesFolder, name.text)
    }

    /// The databases with a folder under `databases/` (names that break the rule are skipped).
    func existingNames() -> [DatabaseName] {
        Self.entries(of: databasesFolder).compactMap { entry in
            guard entry.isDirectory, entry.name != defaultName else { return nil }
            return try? DatabaseName(entry.name)
        }
    }

    /// Makes the folder of a new database; false when it exists already.
    func makeFolder(for name: DatabaseName) throws(DatabaseError) -> Bool {
        try Self.makeDirectory(databasesFolder)
        let path = directory(of: name)
        if mkdir(path, 0o755) == 0 { return true }
        if errno == EEXIST { return false }
        throw DatabaseError(.internal, "could not create \(path): \(Self.describe(errno))")
    }

    /// Moves database `name`'s folder into the trash; returns where it went.
    func moveToTrash(_ name: DatabaseName, now: Int64) throws(DatabaseError) -> String {
        try Self.makeDirectory(trashFolder)
        var target = join(trashFolder, "\(name.text)-\(Self.stamp(now))")
        var attempt = 1
        while access(target, F_OK) == 0 {
            attempt += 1
            target = join(trashFolder, "\(name.text)-\(Self.stamp(now))-\(attempt)")
        }
        guard rename(directory(of: name), target) == 0 else {
            throw DatabaseError(
                .internal, "could not move \(directory(of: name)) to \(target): \(Self.describe(errno))")
        }
        return target
    }

    /// Removes database `name`'s folder and everything in it.
    func purge(_ name: DatabaseName) throws(DatabaseError) {
        try Self.removeTree(directory(of: name))
    }

    /// Removes the trash entries older than `hours` (by the time in their names' modification).
    func emptyTrash(olderThanHours hours: Int, now: Int64) {
        guard hours > 0 else { return }
        let cutoff = now / 1000 - Int64(hours) * 3600
        for entry in Self.entries(of: trashFolder) where entry.isDirectory && entry.modified < cutoff {
            try? Self.removeTree(join(trashFolder, entry.name))
        }
    }

    /// The bytes of database `name`'s files (its own files only: the default database's folder
    /// also holds the others' folders, which are not counted).
    func bytes(of name: DatabaseName) -> Int64 {
        Self.entries(of: directory(of: name)).reduce(0) { $0 + ($1.isDirectory ? 0 : $1.size) }
    }

    // MARK: POSIX

    struct Entry {
        let name: String
        let isDirectory: Bool
        let size: Int64
        /// Seconds since the epoch.
        let modified: Int64
    }

    /// The entries of folder `path` (none when it cannot be read), each with its `lstat`.
    static func entries(of path: String) -> [Entry] {
        let names = (try? PosixFileSystem().listDirectory(path)) ?? []
        return names.compactMap { name in
            var info = stat()
            guard lstat(path + "/" + name, &info) == 0 else { return nil }
            return Entry(
                name: name, isDirectory: (info.st_mode & S_IFMT) == S_IFDIR, size: Int64(info.st_size),
                modified: Int64(info.st_mtim.tv_sec))
        }
    }

    static func makeDirectory(_ path: String) throws(DatabaseError) {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw DatabaseError(.internal, "could not create \(path): \(describe(errno))")
        }
    }

    static func removeTree(_ path: String) throws(DatabaseError) {
        for entry in entries(of: path) {
            let child = path + "/" + entry.name
            if entry.isDirectory {
                try removeTree(child)
            } else if unlink(child) != 0 {
                throw DatabaseError(.internal, "could not remove \(child): \(describe(errno))")
            }
        }
        guard rmdir(path) == 0 || errno == ENOENT else {
            throw DatabaseError(.internal, "could not remove \(path): \(describe(errno))")
        }
    }

    static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// `yyyyMMdd'T'HHmmss'Z'` of `milliseconds` since the epoch, in UTC.
    static func stamp(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    private func join(_ base: String, _ name: String) -> String {
        base.hasSuffix("/") ? base + name : base + "/" + name
    }
}
