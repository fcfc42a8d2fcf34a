/// How a `Storage` syncs and when it compacts.
public struct StorageOptions: Sendable, Equatable {
    /// When appended records are forced to disk.
    public var fsync: FsyncPolicy
    /// Compaction is wanted only once the write-ahead log written since the last snapshot is
    /// larger than this many bytes…
    public var compactionMinBytes: Int
    /// …and larger than this multiple of the last snapshot's size.
    public var compactionRatio: Double
    /// How long `wantsCompaction` stays false after a compaction failed (it is retried then).
    public var compactionRetryDelay: Duration
    /// zlib compression level of snapshots (1 fastest … 9 smallest).
    public var compressionLevel: Int
    /// Under `fsync: always`, how far ahead of its end the current WAL segment is zero-filled
    /// and fsynced (0: not at all). A batch then overwrites blocks the file already has, and its
    /// fdatasync flushes only data, not the file's new size and blocks, which takes less time.
    public var walPreallocationBytes: Int
    /// Where the snapshots and segments the storage drops are hard-linked first, for a reader
    /// that is behind (a trigger runner, `LogArchive`), while that directory exists; nil drops
    /// them (`Storage+Retention`).
    public var retainedLogDirectory: String?

    /// - Parameters:
    ///   - fsync: default `.always`.
    ///   - compactionMinBytes: default 8 MiB: replaying that much log at start-up takes about a
    ///     second (docs/STORAGE.md "Restart time").
    ///   - compactionRatio: default 1.0: compact when WAL bytes > max(8 MiB, 1.0 × snapshot bytes).
    ///   - compactionRetryDelay: default 30 s.
    ///   - compressionLevel: default 1 (fast; the snapshot is written off the engine thread but
    ///     competes with the network threads for the CPU).
    ///   - walPreallocationBytes: default 1 MiB (zero-filling it takes about a millisecond).
    public init(
        fsync: FsyncPolicy = .always, compactionMinBytes: Int = 8 * 1024 * 1024, compactionRatio: Double = 1.0,
        compactionRetryDelay: Duration = .seconds(30), compressionLevel: Int = 1, walPreallocationBytes: Int = 1 << 20
    ) {
        self.fsync = fsync
        self.compactionMinBytes = compactionMinBytes
        self.compactionRatio = compactionRatio
        self.compactionRetryDelay = compactionRetryDelay
        self.compressionLevel = compressionLevel
        self.walPreallocationBytes = walPreallocationBytes
    }

    /// The defaults: `fsync: always`, compaction at max(8 MiB, 1.0 × snapshot bytes).
    public static let `default` = StorageOptions()
}
