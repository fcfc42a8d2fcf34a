/// When the write-ahead log is forced to disk.
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// Before any acknowledgement or event of a batch leaves the server (the default): every
    /// `Storage.append` fsyncs before it returns.
    case always
    /// About once per second (`Storage.syncIfDue`); a crash may lose the last second of
    /// acknowledged writes.
    case everysec
    /// Never explicitly; the operating system decides. Rotation and `close` still fsync.
    case never
}
