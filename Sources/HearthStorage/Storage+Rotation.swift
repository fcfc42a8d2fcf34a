import Logging

/// Rotation: starting a new write-ahead-log segment (engine thread, for Storage+Compaction).
extension Storage {
    /// Cuts the zeros a segment no longer written to was preallocated with. Best effort: recovery
    /// reads zeros after a segment's last batch as its end, so a failure only leaves them there.
    private func trimPreallocation(_ file: OpenFile) {
        // A refused zero-fill may have left zeros past `segmentFileEnd` too.
        guard segmentFileEnd > segmentEnd || preallocationRefused else { return }
        do { try fileSystem.truncate(file, to: segmentEnd) } catch {
            logger.debug("could not trim a WAL segment's preallocated room", metadata: ["error": "\(error)"])
        }
    }

    /// Points appends at a segment just created at `firstRev`: only its header, no zeros yet.
    func startedSegment(firstRev: UInt64) {
        segmentFirstRev = firstRev
        segmentEnd = Int64(WALFormat.segmentHeaderSize)
        segmentFileEnd = segmentEnd
        preallocationRefused = false
    }

    /// The first revision of the current segment.
    var currentSegmentFirstRev: UInt64 { segmentFirstRev }

    /// Starts a new segment at `firstRev` (= `lastRev + 1`): fsyncs the current one, creates
    /// the new one and switches to it. Throws when the new segment could not be created (nothing
    /// changed, the current segment stays in use); fails the storage when the fsync of the
    /// current segment or of the directory fails.
    func rotate(to firstRev: UInt64) throws(StorageError) {
        guard let old = segment else { return }
        waitForDeferredSync()
        if let error = adoptSyncFailure() { throw .failed(after: error) }
        if unsynced {
            do { try timedFsync(old) } catch { throw fail(error, truncatingTo: nil) }
            unsynced = false
            lastSync = ContinuousClock.now
            syncer?.synced(upTo: lastRev, end: segmentEnd)
        }
        switch Storage.createSegment(firstRev: firstRev, directory: directory, fileSystem: fileSystem) {
        case .failed(let error, let renamed):
            // After the rename only the directory's durability is in doubt: the empty segment
            // is consistent on disk, but appending to either segment could be lost.
            if renamed { throw fail(error, truncatingTo: nil) }
            throw error
        case .created(let file):
            let oldBytes = segmentEnd
            shared.withLock { $0.olderSegmentBytes += oldBytes }
            trimPreallocation(old)
            fileSystem.close(old)
            segment = file
            startedSegment(firstRev: firstRev)
            syncer?.synced(upTo: lastRev, end: segmentEnd)
            logger.debug("started a new WAL segment", metadata: ["firstRev": "\(firstRev)"])
        }
    }
}
