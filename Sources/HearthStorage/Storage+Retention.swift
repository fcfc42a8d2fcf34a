import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeping the log a reader behind the engine still needs (a database's trigger runner).
///
/// With `StorageOptions.retainedLogDirectory` set and existing, every snapshot and WAL segment the storage is
/// about to drop (after a compaction, a snapshot installed from a leader, or at recovery) is
/// first hard-linked into that directory, which only the reader reads and prunes
/// (`LogArchive`). The links are made and the directory fsynced before `MANIFEST` moves on, so
/// a crash never leaves the reader without the files it had. Nothing in the data directory
/// itself changes: recovery ignores the other directory.
extension Storage {
    /// Hard-links `names` (files of `directory`) into the retained log directory, skipping
    /// temporaries and names already there. Returns false when a link could not be made (the
    /// reader then loses those files, and says so when it needs them).
    @discardableResult
    static func retain(
        _ names: [String], from directory: String, options: StorageOptions, fileSystem: any FileSystem, logger: Logger
    ) -> Bool {
        // The directory exists only while the database has triggers (their runner makes it).
        guard let retained = options.retainedLogDirectory, fileSystem.fileExists(retained) else { return true }
        let kept = names.filter { !DataFiles.isTemporary($0) && DataFiles.isLogFile($0) }
        guard !kept.isEmpty else { return true }
        var complete = true
        for name in kept {
            let target = DataFiles.path(retained, name)
            if fileSystem.fileExists(target) { continue }
            if link(DataFiles.path(directory, name), target) != 0 {
                complete = false
                logger.error(
                    "could not keep a log file for the triggers",
                    metadata: ["file": "\(name)", "errno": "\(errno)", "directory": "\(retained)"])
            }
        }
        try? fileSystem.fsyncDirectory(retained)
        return complete
    }
}

extension DataFiles {
    /// A snapshot or a WAL segment.
    static func isLogFile(_ name: String) -> Bool {
        snapshotRev(name) != nil || segmentFirstRev(name) != nil
    }
}
