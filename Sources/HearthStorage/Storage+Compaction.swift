public import HearthCore

extension Storage {
    /// Whether a compaction should start now: none is running, the storage is healthy, no failed
    /// compaction is waiting out its retry delay, and the log written since the last snapshot is
    /// larger than both `compactionMinBytes` and `compactionRatio` × the snapshot's size.
    /// Engine thread.
    public var wantsCompaction: Bool {
        guard isUsable else { return false }
        let wal = walBytes
        return shared.withLock { state in
            if state.compacting { return false }
            if let retryAt = state.retryAt, ContinuousClock.now < retryAt { return false }
            let threshold = max(
                Double(options.compactionMinBytes), options.compactionRatio * Double(state.snapshotBytes))
            return Double(wal) > threshold
        }
    }

    /// Whether a compaction is running. Any thread.
    public var isCompacting: Bool {
        shared.withLock { $0.compacting }
    }

    /// Compactions finished and failed since open (metrics, tests). Any thread.
    public var compactionCounts: (completed: Int, failed: Int) {
        shared.withLock { ($0.completedCompactions, $0.failedCompactions) }
    }

    /// Blocks until no compaction is running (tests; `close` does it too). Any thread but the
    /// compaction queue's.
    public func waitForCompaction() {
        compactionGroup.wait()
    }

    /// Starts a compaction from `root`, the tree at revision `rev`, which must be the revision
    /// of the last record appended (call it right after `append` on the engine thread, with the
    /// database's root: capturing it is O(1)).
    ///
    /// The snapshot also holds the onDisconnect registrations live at that moment (`onDisconnect`),
    /// so the log records of those that ran or were cancelled go with the old segments, and the
    /// write ids the server remembers at `rev`: `writeIDs` is called on the compaction queue (so
    /// it must read a value copy taken now, not state the engine goes on changing).
    ///
    /// On the calling thread it only waits for a deferred fsync in flight and starts a new WAL
    /// segment at `rev + 1` (fsync of the current segment, creation of the new one). The
    /// snapshot is written on the storage's compaction queue while appends go on:
    /// `snapshot-<rev>` and then `MANIFEST` are each written to a temporary file, fsynced, renamed
    /// and the directory fsynced; only then are the older segments and snapshots removed.
    /// Returns immediately; does nothing when a compaction is already running or the storage has
    /// failed. Errors are logged and leave the previous files in use; `wantsCompaction` then
    /// stays false for `compactionRetryDelay`.
    public func compact(root: Node, rev: UInt64, writeIDs: (@Sendable () -> WriteIDLog)? = nil) {
        // The snapshot must hold nothing a deferred fsync could still lose.
        waitForDeferredSync()
        guard isUsable, adoptSyncFailure() == nil else { return }
        guard rev == lastRev else {
            logger.error(
                "compaction not started: it must capture the tree at the last appended revision",
                metadata: ["rev": "\(rev)", "lastAppendedRev": "\(lastRev)"])
            return
        }
        let claimed = shared.withLock { state in
            if state.compacting { return false }
            state.compacting = true
            return true
        }
        guard claimed else { return }
        if currentSegmentFirstRev != rev + 1 {
            do { try rotate(to: rev + 1) } catch {
                compactionFailed(rev: rev, error: "could not start a new WAL segment: \(error)")
                return
            }
        }
        // The registrations live now are those at `rev` (the last append), like the tree.
        let registrations = onDisconnect
        compactionGroup.enter()
        compactionQueue.async { [self] in
            defer { compactionGroup.leave() }
            runCompaction(root: root, rev: rev, onDisconnect: registrations, writeIDs: writeIDs?() ?? WriteIDLog())
        }
    }

    /// Writes the snapshot and the manifest, then removes what they made obsolete. Compaction
    /// queue.
    private func runCompaction(root: Node, rev: UInt64, onDisconnect: OnDisconnectLog, writeIDs: WriteIDLog) {
        let started = ContinuousClock.now
        guard
            let file = SnapshotFile.encode(
                root: root, rev: rev, onDisconnect: onDisconnect, writeIDs: writeIDs,
                level: options.compressionLevel)
        else {
            compactionFailed(rev: rev, error: "zlib could not compress the snapshot")
            return
        }
        do {
            try fileSystem.writeAtomically(
                file, to: DataFiles.path(directory, DataFiles.snapshotName(rev)), directory: directory)
            if options.retainedLogDirectory != nil {
                // What the new MANIFEST makes obsolete, kept for a reader behind before it is.
                let names = try fileSystem.listDirectory(directory)
                Storage.retain(
                    DataFiles.obsolete(names: names, snapshotRev: rev), from: directory, options: options,
                    fileSystem: fileSystem, logger: logger)
            }
            try fileSystem.writeAtomically(
                Manifest(snapshotRev: rev).encoded(), to: DataFiles.path(directory, DataFiles.manifest),
                directory: directory)
        } catch {
            compactionFailed(rev: rev, error: "\(error)")
            return
        }
        // The new snapshot and MANIFEST are durable: older files are no longer needed.
        do {
            let names = try fileSystem.listDirectory(directory)
            Storage.removeObsolete(
                DataFiles.obsolete(names: names, snapshotRev: rev), directory: directory, fileSystem: fileSystem,
                logger: logger)
        } catch {
            logger.debug("could not list the data directory to remove obsolete files", metadata: ["error": "\(error)"])
        }
        shared.withLock { state in
            state.compacting = false
            state.snapshotBytes = Int64(file.count)
            state.olderSegmentBytes = 0
            state.retryAt = nil
            state.completedCompactions += 1
        }
        logger.debug(
            "compaction finished",
            metadata: [
                "rev": "\(rev)", "snapshotBytes": "\(file.count)", "elapsed": "\(ContinuousClock.now - started)",
            ])
    }

    private func compactionFailed(rev: UInt64, error: String) {
        let retryAt = ContinuousClock.now + options.compactionRetryDelay
        shared.withLock { state in
            state.compacting = false
            state.retryAt = retryAt
            state.failedCompactions += 1
        }
        logger.error(
            "compaction failed; the previous snapshot and log stay in use",
            metadata: ["rev": "\(rev)", "error": "\(error)", "retryIn": "\(options.compactionRetryDelay)"])
    }
}
