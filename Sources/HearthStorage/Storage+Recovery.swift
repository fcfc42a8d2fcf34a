public import HearthCore
public import Logging

/// Opening a data directory: its lock, and the state recovered from its snapshot and log.
extension Storage {
    /// Opens the data directory (creating it and its files when missing), takes its lock and
    /// recovers the state: the snapshot `MANIFEST` names plus the WAL records after it, the
    /// onDisconnect registrations included (`onDisconnect`: the server runs them). A torn
    /// record at the very end of the last segment (a write cut short by a crash) is truncated
    /// with a warning.
    ///
    /// - Throws: `StorageError` of kind `.locked` (another process has the directory),
    ///   `.corrupt` (with file and byte offset; nothing is changed, `hearth check --repair` is
    ///   suggested) or `.io`.
    /// - Parameter progress: hears how far recovery has got (a large directory takes seconds),
    ///   on the calling thread: at each step and about every megabyte.
    /// - Returns: the storage, and the tree and revision to start the database from.
    public static func open(
        directory: String, options: StorageOptions = .default, fileSystem: any FileSystem = PosixFileSystem(),
        logger: Logger, progress: ((ScanProgress) -> Void)? = nil
    ) throws(StorageError) -> (storage: Storage, recovered: (root: Node, rev: UInt64)) {
        let lock = try lock(directory: directory, fileSystem: fileSystem)
        do {
            return try recover(
                directory: directory, options: options, fileSystem: fileSystem, logger: logger, lock: lock,
                progress: progress)
        } catch {
            fileSystem.close(lock)
            throw error
        }
    }

    /// Creates `directory` when missing and takes `LOCK` in it.
    static func lock(directory: String, fileSystem: any FileSystem) throws(StorageError) -> OpenFile {
        try fileSystem.makeDirectory(directory)
        let lock = try fileSystem.open(DataFiles.path(directory, DataFiles.lock), mode: .createOrOpen)
        let locked: Bool
        do { locked = try fileSystem.lockExclusive(lock) } catch {
            fileSystem.close(lock)
            throw error
        }
        guard locked else {
            fileSystem.close(lock)
            throw .locked(directory: directory)
        }
        return lock
    }

    private static func recover(
        directory: String, options: StorageOptions, fileSystem: any FileSystem, logger: Logger, lock: OpenFile,
        progress: ((ScanProgress) -> Void)?
    ) throws(StorageError) -> (storage: Storage, recovered: (root: Node, rev: UInt64)) {
        let started = ContinuousClock.now
        var scan = try DirectoryScan.run(directory: directory, fileSystem: fileSystem, progress: progress)
        if let problem = scan.problem {
            guard problem.isTornTail, !scan.liveSegments.isEmpty else {
                throw .corrupt(
                    file: DataFiles.path(directory, problem.file), offset: problem.offset, reason: problem.reason,
                    directory: directory)
            }
            try truncateTornTail(problem, scan: &scan, directory: directory, fileSystem: fileSystem, logger: logger)
        }
        if scan.isNew {
            try fileSystem.writeAtomically(
                Manifest(snapshotRev: nil).encoded(), to: DataFiles.path(directory, DataFiles.manifest),
                directory: directory)
            logger.debug("initialised a new data directory", metadata: ["directory": "\(directory)"])
        }
        // Make the MANIFEST that was read durable before removing what it made obsolete.
        try fileSystem.fsyncDirectory(directory)
        retain(scan.obsolete, from: directory, options: options, fileSystem: fileSystem, logger: logger)
        removeObsolete(scan.obsolete, directory: directory, fileSystem: fileSystem, logger: logger)

        let rev = scan.rev
        let segment: OpenFile
        let segmentFirstRev: UInt64
        let segmentEnd: Int64
        var segmentFileEnd = Int64(WALFormat.segmentHeaderSize)
        var olderBytes = scan.liveSegments.reduce(Int64(0)) { $0 + $1.validEnd }
        if let last = scan.liveSegments.last, last.nextRev == rev + 1 {
            segment = try fileSystem.open(DataFiles.path(directory, last.name), mode: .readWrite)
            segmentFirstRev = last.firstRev
            segmentEnd = last.validEnd
            segmentFileEnd = last.size
            olderBytes -= last.validEnd
        } else {
            switch createSegment(firstRev: rev + 1, directory: directory, fileSystem: fileSystem) {
            case .created(let file): segment = file
            case .failed(let error, _): throw error
            }
            segmentFirstRev = rev + 1
            segmentEnd = Int64(WALFormat.segmentHeaderSize)
        }
        let storage = Storage(
            directory: directory, options: options, fileSystem: fileSystem, logger: logger, lockFile: lock,
            segment: segment, segmentFirstRev: segmentFirstRev, segmentEnd: segmentEnd,
            segmentFileEnd: segmentFileEnd, lastRev: rev,
            onDisconnect: scan.onDisconnect, writeIDs: scan.writeIDs,
            shared: Shared(snapshotBytes: scan.snapshotBytes, olderSegmentBytes: olderBytes))
        let elapsed = ContinuousClock.now - started
        logger.debug(
            "recovered the data directory",
            metadata: [
                "directory": "\(directory)", "rev": "\(rev)", "snapshotRev": "\(scan.manifest.baseRev)",
                "replayedRecords": "\(scan.replayedRecords)", "onDisconnect": "\(scan.onDisconnect.count)",
                "writeIDs": "\(scan.writeIDs.entries.count)",
                "elapsed": "\(elapsed)",
            ])
        return (storage, (scan.root, rev))
    }

    /// Cuts the torn end of the last segment off (or removes a segment whose header is torn).
    private static func truncateTornTail(
        _ problem: DirectoryScan.Problem, scan: inout DirectoryScan, directory: String, fileSystem: any FileSystem,
        logger: Logger
    ) throws(StorageError) {
        let path = DataFiles.path(directory, problem.file)
        let last = scan.liveSegments.count - 1
        let dropped = scan.liveSegments[last].size - problem.cutOffset
        if problem.cutOffset < Int64(WALFormat.segmentHeaderSize) {
            try fileSystem.remove(path)
            try fileSystem.fsyncDirectory(directory)
            scan.liveSegments.removeLast()
        } else {
            let file = try fileSystem.open(path, mode: .readWrite)
            defer { fileSystem.close(file) }
            try fileSystem.truncate(file, to: problem.cutOffset)
            try fileSystem.fsync(file)
            scan.liveSegments[last].size = problem.cutOffset
        }
        scan.problem = nil
        logger.warning(
            """
            truncated a torn batch at the end of the write-ahead log (cut short by a crash or a failed append, \
            so never acknowledged under fsync always)
            """,
            metadata: [
                "file": "\(path)", "offset": "\(problem.offset)", "truncatedTo": "\(problem.cutOffset)",
                "droppedBytes": "\(dropped)", "reason": "\(problem.reason)",
            ])
    }
}
