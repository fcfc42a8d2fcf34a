import Dispatch
public import HearthCore
public import Logging
import Synchronization

/// The durable home of one database: a data directory with `MANIFEST`, zlib-compressed
/// snapshots and write-ahead-log segments (docs/STORAGE.md).
///
/// Confinement: `append`, `syncIfDue`, `sync`, `compact`, `wantsCompaction`, `close` and the
/// other members without a note below must be called from one thread at a time — the engine's
/// single thread. Compaction runs on the storage's own serial dispatch queue and hands its result
/// back through the `shared` mutex; `isCompacting` and `waitForCompaction()` may be called from
/// any thread. That is what makes the `@unchecked Sendable` sound.
///
/// A failed write or fsync marks the storage failed: the call throws the I/O error, and every
/// later `append`, `sync` or `syncIfDue` throws `StorageError.Kind.failed` until the data
/// directory is opened again (a new process). Nothing of the failed batch is acknowledged, and
/// the storage truncates the segment back to the end of the last good batch when it can. A
/// deferred fsync that fails (on the sync thread, `LogSyncer`) fails the storage the same way, at
/// the engine's next call (`adoptSyncFailure`), back to the last durable batch.
public final class Storage: @unchecked Sendable {
    /// The data directory.
    public let directory: String
    public let options: StorageOptions
    let fileSystem: any FileSystem
    let logger: Logger

    // Engine-thread state.
    private var lockFile: OpenFile?
    var segment: OpenFile?
    var segmentFirstRev: UInt64
    /// Where the next record goes: the end of the last good batch.
    var segmentEnd: Int64
    /// The segment's size: from `segmentEnd` to here it holds zeros (its preallocated room).
    var segmentFileEnd: Int64
    /// Whether zero-filling the current segment failed (`preallocate`): it then appends.
    var preallocationRefused = false
    /// The revision of the last record appended.
    public internal(set) var lastRev: UInt64
    /// The onDisconnect registrations neither run nor cancelled: those recovered, then kept up
    /// to date by `append`, and written into every snapshot.
    public internal(set) var onDisconnect: OnDisconnectLog
    /// The write ids recovery found (the snapshot's and the log's after it), for the server to
    /// rebuild its window from; `takeRecoveredWriteIDs` hands them over once.
    private var recoveredWriteIDs: WriteIDLog
    var unsynced = false
    var lastSync = ContinuousClock.now
    private var failure: StorageError?
    /// The thread that fsyncs deferred appends, started by the first one.
    private var syncer: LogSyncer?
    private var syncFailureAdopted = false
    private var isClosed = false
    /// The batch's records, encoded. Unchecked for exclusivity: only `append` touches it, on
    /// the engine's thread, and the encoder it calls cannot reach it.
    @exclusivity(unchecked) private var encodeBuffer: [UInt8] = []

    /// State shared with the compaction queue.
    struct Shared {
        var compacting = false
        var snapshotBytes: Int64 = 0
        /// Bytes of the segments before the current one that are not yet covered by a snapshot.
        var olderSegmentBytes: Int64 = 0
        var retryAt: ContinuousClock.Instant?
        var completedCompactions = 0
        var failedCompactions = 0
    }

    let shared: Mutex<Shared>
    let compactionQueue = DispatchQueue(label: "hearth.storage.compaction")
    let compactionGroup = DispatchGroup()

    private init(
        directory: String, options: StorageOptions, fileSystem: any FileSystem, logger: Logger, lockFile: OpenFile,
        segment: OpenFile, segmentFirstRev: UInt64, segmentEnd: Int64, segmentFileEnd: Int64, lastRev: UInt64,
        onDisconnect: OnDisconnectLog, writeIDs: WriteIDLog, shared: Shared
    ) {
        self.directory = directory
        self.options = options
        self.fileSystem = fileSystem
        self.logger = logger
        self.lockFile = lockFile
        self.segment = segment
        self.segmentFirstRev = segmentFirstRev
        self.segmentEnd = segmentEnd
        self.segmentFileEnd = segmentFileEnd
        self.lastRev = lastRev
        self.onDisconnect = onDisconnect
        self.recoveredWriteIDs = writeIDs
        self.shared = Mutex(shared)
    }

    deinit {
        // A compaction in flight retains the storage, so none runs here.
        if !isClosed { releaseFiles() }
    }

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

    /// The write ids recovery found, in revision order: those the last snapshot kept and those
    /// of the writes logged after it. Returns them once (later calls return none), so that the
    /// storage does not keep them. Engine thread.
    public func takeRecoveredWriteIDs() -> WriteIDLog {
        defer { recoveredWriteIDs = WriteIDLog() }
        return recoveredWriteIDs
    }

    // MARK: - Appending

    /// Appends the records of one batch — consecutive revisions, the first one `lastRev + 1` —
    /// with one write, and under `fsync: always` one fsync, before returning. The batch is
    /// durable (per the policy) when this returns; acknowledge it only then.
    ///
    /// - Throws: `.io` when the write or fsync fails (the storage is then failed, and the
    ///   segment is truncated back to the end of the previous batch when possible), `.failed`
    ///   after an earlier failure, `.invalidArgument` for revisions out of order or after
    ///   `close`.
    public func append(_ writes: [CommittedWrite]) throws(StorageError) {
        try append(writes.map(LogRecord.write))
    }

    /// Appends one batch of records: writes, whose revisions continue from `lastRev` one by one,
    /// and onDisconnect changes, which take none, in any order. As `append(_:)` of writes: one
    /// write and (under `fsync: always`) one fsync, and the whole batch is recovered or none of
    /// it. `onDisconnect` takes the changes once they are in the log.
    ///
    /// With `deferringSync` under `fsync: always`, returns once the batch is written and leaves
    /// its fsync to the storage's sync thread: the batch is durable when `durableRev` reaches
    /// its last revision (`durabilityObserver` hears it), and a failed fsync fails the storage
    /// (`failureObserver`; `adoptSyncFailure`). Under the other policies it changes nothing.
    public func append(_ records: [LogRecord], deferringSync: Bool = false) throws(StorageError) {
        try append(
            count: records.count, writeRev: { records[$0].writeRev }, change: { records[$0].onDisconnectChange },
            deferringSync: deferringSync, beforeSync: {},
            encode: { index, rev, continues, buffer throws(StorageError) in
                try WALFormat.appendRecord(records[index], rev: rev, continues: continues, to: &buffer)
            })
    }

    /// Appends one batch of records whose payloads are already encoded, as `append(_:)` does,
    /// and calls `beforeSync` once the batch is written and before its fsync (a leader sends the
    /// records to its replicas there, so that both flush at once; docs/cluster.md, "Replication stream").
    public func append(
        _ records: [EncodedRecord], deferringSync: Bool = false, beforeSync: () -> Void
    ) throws(StorageError) {
        try append(
            count: records.count, writeRev: { records[$0].writeRev }, change: { records[$0].onDisconnectChange },
            deferringSync: deferringSync, beforeSync: beforeSync,
            encode: { index, rev, continues, buffer throws(StorageError) in
                try WALFormat.appendRecord(rev: rev, continues: continues, to: &buffer) { $0 += records[index].payload }
            })
    }

    /// Appends one batch of records as `append(_:deferringSync:)` does, encoding each payload
    /// once, into the log's own buffer, and returns the records with their payloads as slices of
    /// what was written: what a leader streams to its replicas and retains for them. Record
    /// `i`'s payload is `received(i)` when that is not nil (a replica's, as its leader encoded
    /// it). `beforeSync` gets the records once the batch is written and before its fsync (as in
    /// `append(_:deferringSync:beforeSync:)`).
    public func appendEncoding(
        _ records: [LogRecord], received: (Int) -> ArraySlice<UInt8>?, deferringSync: Bool = false,
        beforeSync: ([EncodedRecord]) -> Void
    ) throws(StorageError) -> [EncodedRecord] {
        // Where each record's payload lies in the buffer.
        var payloads: [Range<Int>] = []
        payloads.reserveCapacity(records.count)
        var encoded: [EncodedRecord] = []
        try append(
            count: records.count, writeRev: { records[$0].writeRev }, change: { records[$0].onDisconnectChange },
            deferringSync: deferringSync,
            beforeSync: {
                let written = encodeBuffer
                // The slices keep this buffer: the next batch encodes into a new one, sized for
                // it (emptying this one in place would copy it, at its full capacity).
                encodeBuffer = []
                encoded.reserveCapacity(records.count)
                for index in records.indices {
                    encoded.append(EncodedRecord(records[index], payload: written[payloads[index]]))
                }
                beforeSync(encoded)
            },
            encode: { index, rev, continues, buffer throws(StorageError) in
                try WALFormat.appendRecord(rev: rev, continues: continues, to: &buffer) { buffer in
                    let start = buffer.count
                    if let given = received(index) {
                        buffer += given
                    } else {
                        records[index].encodePayload(into: &buffer)
                    }
                    payloads.append(start..<buffer.count)
                }
            })
        return encoded
    }

    /// Appends `count` records, read by index: `writeRev`, `change` and `encode` look into a
    /// record where the caller's array holds it, so that no record is copied out of it (a copy
    /// of an encoded record retains its payload, and a log record's its written nodes).
    private func append(
        count: Int, writeRev: (Int) -> UInt64?, change: (Int) -> OnDisconnectChange?, deferringSync: Bool,
        beforeSync: () -> Void,
        encode: (Int, UInt64, Bool, inout [UInt8]) throws(StorageError) -> Void
    ) throws(StorageError) {
        try checkUsable()
        guard count > 0, let segment else { return }
        var rev = lastRev
        for index in 0..<count {
            guard let itemRev = writeRev(index) else { continue }
            guard itemRev == rev + 1 else {
                throw .invalid("append: got rev \(itemRev) where rev \(rev + 1) was expected")
            }
            rev += 1
        }
        encodeBuffer.removeAll(keepingCapacity: true)
        if encodeBuffer.capacity == 0 { encodeBuffer.reserveCapacity(count * 96) }
        rev = lastRev
        for index in 0..<count {
            if let itemRev = writeRev(index) { rev = itemRev }
            try encode(index, rev, index < count - 1, &encodeBuffer)
        }
        let start = segmentEnd
        try preallocate(segment, toHold: start + Int64(encodeBuffer.count))
        do { try fileSystem.write(segment, encodeBuffer, at: start) } catch {
            throw fail(error, truncatingTo: start)
        }
        segmentFileEnd = max(segmentFileEnd, start + Int64(encodeBuffer.count))
        unsynced = true
        let end = start + Int64(encodeBuffer.count)
        beforeSync()  // (which may take `encodeBuffer`: see `appendEncoding`)
        if options.fsync == .always {
            if deferringSync {
                startedSyncer().request(LogSyncer.Target(file: segment, rev: rev, end: end))
            } else {
                do { try timedFsync(segment) } catch { throw fail(error, truncatingTo: start) }
                unsynced = false
                syncer?.synced(upTo: rev, end: end)
            }
        }
        segmentEnd = end
        lastRev = rev
        for index in 0..<count {
            if let change = change(index) { onDisconnect.apply(change) }
        }
        if encodeBuffer.capacity > 16 * 1024 * 1024 { encodeBuffer = [] }
    }

    /// Makes the segment hold zeros, written and fsynced, at least up to `end`: when it does not,
    /// zero-fills it from its end up to the next multiple of `walPreallocationBytes` past `end`.
    /// The zeros are a speed-up, not a promise: when their write fails (a full disk), the segment
    /// appends without them from then on. A failed fsync fails the storage like a failed append
    /// (nothing of the batch was written).
    private func preallocate(_ segment: OpenFile, toHold end: Int64) throws(StorageError) {
        guard options.fsync == .always, options.walPreallocationBytes > 0, end > segmentFileEnd,
            !preallocationRefused
        else { return }
        let step = Int64(options.walPreallocationBytes)
        let newEnd = (end / step + 1) * step
        let zeros = [UInt8](repeating: 0, count: Int(newEnd - segmentFileEnd))
        do { try fileSystem.write(segment, zeros, at: segmentFileEnd) } catch {
            // Zeros it wrote before failing are harmless: they read as the log's end.
            preallocationRefused = true
            logger.warning(
                "could not zero-fill the write-ahead log ahead of its records (is the disk full?); appending without",
                metadata: ["file": "\(segment.path)", "error": "\(error)"])
            return
        }
        do { try timedFsync(segment) } catch { throw fail(error, truncatingTo: segmentEnd) }
        segmentFileEnd = newEnd
    }

    /// Under `fsync: everysec`, fsyncs the log when something was appended since the last
    /// fsync and at least a second has passed; otherwise does nothing (cheap). The engine calls
    /// it after every batch and from a one-second timer on its own thread (the storage runs no
    /// timer of its own).
    public func syncIfDue() throws(StorageError) {
        try checkUsable()
        guard options.fsync == .everysec, unsynced, ContinuousClock.now - lastSync >= .seconds(1) else { return }
        try sync()
    }

    /// Fsyncs the log now, whatever the policy.
    public func sync() throws(StorageError) {
        try checkUsable()
        guard unsynced, let segment else { return }
        do { try timedFsync(segment) } catch { throw fail(error, truncatingTo: nil) }
        unsynced = false
        lastSync = ContinuousClock.now
    }

    /// Flushes and fsyncs the log, waits for a running compaction and releases the lock
    /// (graceful shutdown). Later calls do nothing; every other call throws afterwards.
    public func close() throws(StorageError) {
        guard !isClosed else { return }
        compactionGroup.wait()
        waitForDeferredSync()
        _ = adoptSyncFailure()
        isClosed = true
        defer { releaseFiles() }
        if failure == nil, unsynced, let segment {
            do { try timedFsync(segment) } catch {
                logger.critical("storage fault: the final fsync failed", metadata: ["error": "\(error)"])
                throw error
            }
            unsynced = false
        }
        logger.debug("closed the data directory", metadata: ["directory": "\(directory)", "rev": "\(lastRev)"])
    }

    /// The error that failed the storage, if any.
    public var failureError: StorageError? { failure }

    /// Hears how long each fsync of the log took (in `append`, its zero-filling included, in
    /// `sync`, `syncIfDue`, at a segment rotation and in `close`; not the compaction's), on the
    /// thread that called those. Set it
    /// once, right after `open` and before anything else uses the storage: the storage keeps no
    /// metrics of its own, the server's metrics listen here.
    public var fsyncObserver: (@Sendable (Duration) -> Void)?

    /// Fsyncs the current or previous segment, timed for `fsyncObserver`.
    private func timedFsync(_ file: OpenFile) throws(StorageError) {
        try Self.timedFsync(file, on: fileSystem, observer: fsyncObserver)
    }

    /// `timedFsync` without the storage (the sync thread's).
    private static func timedFsync(
        _ file: OpenFile, on fileSystem: any FileSystem, observer: (@Sendable (Duration) -> Void)?
    ) throws(StorageError) {
        guard let observer else { return try fileSystem.fsync(file) }
        let started = ContinuousClock.now
        try fileSystem.fsync(file)
        observer(ContinuousClock.now - started)
    }

    /// Bytes of write-ahead log not yet covered by a snapshot.
    public var walBytes: Int64 {
        segmentEnd + shared.withLock { $0.olderSegmentBytes }
    }

    /// Size of the snapshot recovery would start from (0 before the first one). Any thread.
    public var snapshotBytes: Int64 {
        shared.withLock { $0.snapshotBytes }
    }

    private func checkUsable() throws(StorageError) {
        if isClosed { throw .invalid("the storage of \(directory) is closed") }
        _ = adoptSyncFailure()
        if let failure { throw .failed(after: failure) }
    }

    // MARK: - Deferred fsyncs

    /// Hears each revision that becomes durable after an append that deferred its fsync, on the
    /// sync thread (or the engine's, when an fsync of its own covered it). Set it once, right
    /// after `open`, like `fsyncObserver`.
    public var durabilityObserver: (@Sendable (UInt64) -> Void)?

    /// Hears a deferred fsync that failed, on the sync thread. The storage is failed from then
    /// on; the engine learns what is durable and cuts the rest with `adoptSyncFailure`.
    public var failureObserver: (@Sendable (StorageError) -> Void)?

    /// The last revision known durable: everything appended, except the batches whose deferred
    /// fsync has not finished. Engine thread.
    public var durableRev: UInt64 {
        guard let syncer else { return lastRev }
        return min(lastRev, syncer.durableRev)
    }

    /// When a deferred fsync failed: fails the storage with its error (once), truncating the
    /// segment back to the end of the last durable batch so that no restart recovers what was
    /// never acknowledged, and returns the error; `durableRev` is then the revision the engine
    /// must go back to. Nil while no deferred fsync failed. Engine thread.
    public func adoptSyncFailure() -> StorageError? {
        // A failed syncer has stopped: what it made durable is final.
        guard let syncer else { return nil }
        let status = syncer.status
        guard let error = status.failure else { return nil }
        if !syncFailureAdopted {
            syncFailureAdopted = true
            lastRev = status.durableRev
            segmentEnd = status.durableEnd
            _ = fail(error, truncatingTo: status.durableEnd)
        }
        return error
    }

    /// Waits for the deferred fsync in flight, if any (before the file it syncs is replaced or
    /// closed). Engine thread.
    public func waitForDeferredSync() { syncer?.wait() }

    /// The log was replaced (a snapshot installed): what it has is durable.
    func resetSyncer() { syncer?.reset(durableRev: lastRev, end: segmentEnd) }

    private func startedSyncer() -> LogSyncer {
        if let syncer { return syncer }
        let fileSystem = fileSystem
        let observer = fsyncObserver
        let started = LogSyncer(
            durableRev: lastRev, durableEnd: segmentEnd,
            fsync: { file throws(StorageError) in try Self.timedFsync(file, on: fileSystem, observer: observer) },
            onDurable: durabilityObserver ?? { _ in }, onFailure: failureObserver ?? { _ in })
        syncer = started
        return started
    }

    /// Marks the storage failed with `error`, truncating the segment back to `offset` (the end
    /// of the last good batch) when given. Returns `error` to throw.
    func fail(_ error: StorageError, truncatingTo offset: Int64?) -> StorageError {
        if failure == nil { failure = error }
        var truncated = "no"
        if let offset, let segment {
            do {
                try fileSystem.truncate(segment, to: offset)
                truncated = "yes"
            } catch {
                truncated = "failed: \(error)"
            }
        }
        logger.critical(
            "storage fault: writes are refused until the server is restarted",
            metadata: [
                "directory": "\(directory)", "error": "\(error)", "lastGoodRev": "\(lastRev)",
                "truncatedToLastGoodBatch": "\(truncated)",
            ])
        return error
    }

    private func releaseFiles() {
        if let segment { fileSystem.close(segment) }
        if let lockFile { fileSystem.close(lockFile) }
        segment = nil
        lockFile = nil
    }

    // MARK: - Rotation (engine thread, for Storage+Compaction)

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

    var isUsable: Bool { failure == nil && !isClosed }

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
