#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearth check [--repair] <data-dir>`: verifies a data directory, and repairs it by truncating
/// the data at the first bad record.
public enum StorageChecker {
    /// Verifies everything recovery reads — `MANIFEST`, the snapshot (header, checksum,
    /// inflation, JSON, tree, onDisconnect registrations) and every WAL record after it
    /// (checksums, revision order, payload, onDisconnect records) — and reports the first problem with its file and byte offset. Read-only; it
    /// takes no lock, so a server may be running (its last record may then look torn).
    /// `progress` hears how far the check has got, as recovery's does.
    public static func check(
        directory: String, fileSystem: any FileSystem = PosixFileSystem(), progress: ((ScanProgress) -> Void)? = nil
    ) -> CheckReport {
        do {
            let scan = try DirectoryScan.run(directory: directory, fileSystem: fileSystem, progress: progress)
            return report(scan, directory: directory, actions: [], backup: nil)
        } catch {
            return CheckReport(
                directory: directory,
                problem: CheckReport.Problem(
                    file: error.file ?? directory, offset: 0, reason: error.message, isTornTail: false),
                rev: 0, snapshotRev: nil, segments: [], actions: [], backupDirectory: nil)
        }
    }

    /// Repairs `directory` so that it opens: takes its lock (so no server may be running), and
    /// at the first bad record of the log copies the segment to `<directory>/backup-<timestamp>/`,
    /// truncates it there and moves every later segment into the backup too. A missing or
    /// damaged `MANIFEST` is rebuilt from the newest valid snapshot (the old one is kept in the
    /// backup). A damaged snapshot is not repairable: that throws, changing nothing.
    ///
    /// - Returns: the report after the repair, listing what was done (`actions`).
    /// - Throws: `.locked` when a server holds the directory, `.corrupt` for a damaged snapshot,
    ///   `.io` when a file cannot be read or written.
    public static func repair(
        directory: String, fileSystem: any FileSystem = PosixFileSystem(), progress: ((ScanProgress) -> Void)? = nil
    ) throws(StorageError) -> CheckReport {
        let lock = try Storage.lock(directory: directory, fileSystem: fileSystem)
        defer { fileSystem.close(lock) }
        var repair = Repair(directory: directory, fileSystem: fileSystem)
        for _ in 0..<1000 {
            let scan = try DirectoryScan.run(directory: directory, fileSystem: fileSystem, progress: progress)
            guard let problem = scan.problem else {
                return report(scan, directory: directory, actions: repair.actions, backup: repair.backup)
            }
            try repair.fix(problem, scan: scan)
        }
        throw .invalid("repair of \(directory) did not converge; actions so far: \(repair.actions)")
    }

    static func report(_ scan: DirectoryScan, directory: String, actions: [String], backup: String?) -> CheckReport {
        var report = CheckReport(
            directory: directory,
            problem: scan.problem.map {
                CheckReport.Problem(
                    file: DataFiles.path(directory, $0.file), offset: $0.offset, reason: $0.reason,
                    isTornTail: $0.isTornTail)
            },
            rev: scan.rev, snapshotRev: scan.manifest.snapshotRev, segments: scan.liveSegments.map(\.name),
            actions: actions, backupDirectory: backup)
        report.pendingOnDisconnect = scan.onDisconnect.count
        return report
    }
}

/// The state of one repair: the backup directory (made on first use) and the actions taken.
private struct Repair {
    let directory: String
    let fileSystem: any FileSystem
    var backup: String?
    var actions: [String] = []

    init(directory: String, fileSystem: any FileSystem) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    mutating func fix(_ problem: DirectoryScan.Problem, scan: DirectoryScan) throws(StorageError) {
        let path = DataFiles.path(directory, problem.file)
        if problem.file == DataFiles.manifest {
            try rebuildManifest(problem)
        } else if DataFiles.snapshotRev(problem.file) != nil {
            throw .corrupt(
                file: path, offset: problem.offset,
                reason: "\(problem.reason); a damaged snapshot cannot be repaired (the log before it is gone): "
                    + "restore the data directory from a backup", directory: directory)
        } else {
            try truncateLog(at: problem, later: scan.laterSegments)
        }
        try fileSystem.fsyncDirectory(directory)
    }

    /// Copies the segment to the backup and cuts it at the problem (or moves it there whole when
    /// the problem is in its header), then moves the later segments there too.
    private mutating func truncateLog(at problem: DirectoryScan.Problem, later: [String]) throws(StorageError) {
        let path = DataFiles.path(directory, problem.file)
        let backup = try backupDirectory()
        let copy = DataFiles.path(backup, problem.file)
        if problem.cutOffset < Int64(WALFormat.segmentHeaderSize) {
            if fileSystem.fileExists(copy) {
                try fileSystem.remove(path)
            } else {
                try fileSystem.rename(path, to: copy)
            }
            actions.append("moved \(problem.file) to the backup (\(problem.reason) at byte offset \(problem.offset))")
        } else {
            // A file already copied keeps its original copy.
            if !fileSystem.fileExists(copy) { try fileSystem.copyFile(path, to: copy) }
            let file = try fileSystem.open(path, mode: .readWrite)
            defer { fileSystem.close(file) }
            let size = try fileSystem.size(file)
            try fileSystem.truncate(file, to: problem.cutOffset)
            try fileSystem.fsync(file)
            let batch = problem.cutOffset < problem.offset ? ", the start of the batch holding it" : ""
            actions.append(
                "truncated \(problem.file) at byte offset \(problem.cutOffset)\(batch) (\(problem.reason) at byte "
                    + "offset \(problem.offset)), dropping \(size - problem.cutOffset) bytes")
        }
        for name in later {
            try fileSystem.rename(DataFiles.path(directory, name), to: DataFiles.path(backup, name))
            actions.append("moved \(name), which follows the bad record, to the backup")
        }
    }

    /// Writes a new MANIFEST naming the newest snapshot that is valid (none when there is no
    /// snapshot at all); the old MANIFEST, if any, goes to the backup.
    private mutating func rebuildManifest(_ problem: DirectoryScan.Problem) throws(StorageError) {
        let names = try fileSystem.listDirectory(directory)
        let snapshots = names.compactMap(DataFiles.snapshotRev).sorted(by: >)
        var chosen: UInt64?
        for rev in snapshots {
            let bytes = try fileSystem.readFile(DataFiles.path(directory, DataFiles.snapshotName(rev)))
            if (try? SnapshotFile.decode(bytes, rev: rev)) != nil {
                chosen = rev
                break
            }
        }
        if chosen == nil, let newest = snapshots.first {
            throw .corrupt(
                file: DataFiles.path(directory, DataFiles.manifest), offset: problem.offset,
                reason: "\(problem.reason); no valid snapshot is left to rebuild it from (newest: "
                    + "\(DataFiles.snapshotName(newest))): restore the data directory from a backup",
                directory: directory)
        }
        let backup = try backupDirectory()
        let manifestPath = DataFiles.path(directory, DataFiles.manifest)
        if names.contains(DataFiles.manifest) {
            try fileSystem.copyFile(manifestPath, to: DataFiles.path(backup, DataFiles.manifest))
        }
        try fileSystem.writeAtomically(Manifest(snapshotRev: chosen).encoded(), to: manifestPath, directory: directory)
        let target = chosen.map { DataFiles.snapshotName($0) } ?? "no snapshot"
        actions.append("rebuilt MANIFEST (\(problem.reason)) to start from \(target)")
    }

    /// `<directory>/backup-<UTC timestamp>/`, created on first use.
    private mutating func backupDirectory() throws(StorageError) -> String {
        if let backup { return backup }
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let stamp =
            "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
        var path = DataFiles.path(directory, DataFiles.backupPrefix + stamp)
        var suffix = 2
        while fileSystem.fileExists(path) {
            path = DataFiles.path(directory, DataFiles.backupPrefix + stamp + "-\(suffix)")
            suffix += 1
        }
        try fileSystem.makeDirectory(path)
        try fileSystem.fsyncDirectory(directory)
        backup = path
        return path
    }
}
