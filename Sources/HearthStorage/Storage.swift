import Dispatch
import Logging
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
    var syncer: LogSyncer?
    private var syncFailureAdopted = false
    private var isClosed = false
    /// The batch's records, encoded. Unchecked for exclusivity: only `append` touches it, on
    /// the engine's thread, and the encoder it calls cannot reach it.
    @exclusivity(unchecked) var encodeBuffer: [UInt8] = []

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

    init(
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

    /// The write ids recovery found, in revision order: those the last snapshot kept and those
    /// of the writes logged after it. Returns them once (later calls return none), so that the
    /// storage does not keep them. Engine thread.
    public func takeRecoveredWriteIDs() -> WriteIDLog {
        defer { recoveredWriteIDs = WriteIDLog() }
        return recoveredWriteIDs
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
    func timedFsync(_ file: OpenFile) throws(StorageError) {
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

    func checkUsable() throws(StorageError) {
        if isClosed { throw .invalid("the storage of \(directory) is closed") }
        _ = adoptSyncFailure()
        if let failure { throw .failed(after: failure) }
    }

    var isUsable: Bool { failure == nil && !isClosed }

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

    func startedSyncer() -> LogSyncer {
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
}
