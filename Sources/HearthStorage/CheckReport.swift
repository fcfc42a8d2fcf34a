/// What `StorageChecker.check` or `.repair` found (and did) in a data directory.
public struct CheckReport: Sendable, Equatable, CustomStringConvertible {
    /// The first problem: where and what.
    public struct Problem: Sendable, Equatable {
        /// The damaged file, as a path.
        public let file: String
        /// The byte offset of the first bad byte or record in `file`.
        public let offset: Int64
        public let reason: String
        /// A write cut short by a crash at the very end of the log: opening the directory
        /// truncates it with a warning, so the server starts anyway.
        public let isTornTail: Bool
    }

    /// The data directory.
    public let directory: String
    /// The first problem, or nil when everything is consistent.
    public let problem: Problem?
    /// The revision the data can be recovered to (up to the problem, if any).
    public let rev: UInt64
    /// The revision of the snapshot recovery starts from, if any.
    public let snapshotRev: UInt64?
    /// The WAL segments replayed after the snapshot.
    public let segments: [String]
    /// onDisconnect registrations that are neither run nor cancelled (up to the problem, if
    /// any): the server runs them when it starts.
    public var pendingOnDisconnect = 0
    /// What `repair` changed, in order (empty for `check`).
    public let actions: [String]
    /// Where `repair` kept a copy of every file it changed or removed (nil when it changed
    /// nothing).
    public let backupDirectory: String?

    /// Whether the directory is consistent.
    public var isOK: Bool { problem == nil }

    public var description: String {
        var lines: [String] = []
        if !actions.isEmpty {
            lines.append("repaired \(directory):")
            lines += actions.map { "  - \($0)" }
            if let backupDirectory { lines.append("  the original files are kept in \(backupDirectory)") }
        }
        let snapshot = snapshotRev.map { "snapshot at rev \($0)" } ?? "no snapshot"
        if let problem {
            lines.append("PROBLEM: \(problem.file) is damaged at byte offset \(problem.offset): \(problem.reason).")
            if problem.isTornTail {
                lines.append(
                    "This is a write cut short by a crash at the end of the log; the server truncates it when it "
                        + "starts (data up to rev \(rev) is intact).")
            } else {
                lines.append(
                    "The data is intact up to rev \(rev) (\(snapshot)). Run `hearth check --repair \(directory)` to "
                        + "truncate the data at this point; the files it changes are copied to a backup-<timestamp>/ "
                        + "directory first.")
            }
        } else {
            lines.append(
                "OK: \(directory) is consistent at rev \(rev) (\(snapshot), \(segments.count) WAL segment"
                    + "\(segments.count == 1 ? "" : "s") after it).")
        }
        if pendingOnDisconnect > 0 {
            let count =
                pendingOnDisconnect == 1 ? "1 onDisconnect operation" : "\(pendingOnDisconnect) onDisconnect operations"
            lines.append("\(count) of connections that are gone will run when the server starts.")
        }
        return lines.joined(separator: "\n")
    }
}
