#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the storage could not open, read or write. `description` is a complete message for an
/// operator: it names the file, the byte offset or the failing system call, and what to do.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: Sendable, Equatable {
        /// Another process holds the data directory's `LOCK`.
        case locked
        /// A file failed validation (`file` and `offset` say where).
        case corrupt
        /// A system call failed (`operation`, `file` and `errno` say which).
        case io
        /// The storage refused the call because an earlier write or fsync failed; reopen it.
        case failed
        /// The caller broke the API contract (records out of order, use after close).
        case invalidArgument
    }

    public let kind: Kind
    /// The complete human-readable message.
    public let message: String
    /// The file concerned (`corrupt`, `io`), as a path.
    public let file: String?
    /// The byte offset of the first bad byte or record (`corrupt`).
    public let offset: Int64?
    /// The failing operation, e.g. `"fsync"` (`io`).
    public let operation: String?
    /// The `errno` of the failing system call (`io`).
    public let errno: Int32?
    /// What was wrong at `offset` (`corrupt`).
    public let reason: String?

    init(
        _ kind: Kind, _ message: String, file: String? = nil, offset: Int64? = nil, operation: String? = nil,
        errno: Int32? = nil, reason: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.file = file
        self.offset = offset
        self.operation = operation
        self.errno = errno
        self.reason = reason
    }

    public var description: String { message }

    /// The data directory is locked by another process.
    public static func locked(directory: String) -> StorageError {
        StorageError(
            .locked,
            "the data directory \(directory) is in use by another process (it holds \(directory)/LOCK); "
                + "stop that process or choose another data directory",
            file: directory + "/LOCK")
    }

    /// `file` is damaged at `offset`.
    public static func corrupt(file: String, offset: Int64, reason: String, directory: String) -> StorageError {
        StorageError(
            .corrupt,
            "\(file) is corrupt at byte offset \(offset): \(reason). Refusing to open \(directory) rather than "
                + "drop data; nothing was changed. Run `hearth check --repair \(directory)` to truncate the data at "
                + "the first bad record (every file it changes is first copied to \(directory)/backup-<timestamp>/)",
            file: file, offset: offset, reason: reason)
    }

    /// A system call failed.
    public static func io(operation: String, path: String, errno code: Int32) -> StorageError {
        StorageError(
            .io, "\(operation) \(path) failed: \(errorText(code)) (errno \(code))", file: path, operation: operation,
            errno: code)
    }

    /// The storage is unusable because of the earlier failure `cause`.
    static func failed(after cause: StorageError) -> StorageError {
        StorageError(
            .failed,
            "storage is unavailable after an earlier failure (\(cause.message)); "
                + "writes are refused until the server is restarted",
            file: cause.file, operation: cause.operation, errno: cause.errno)
    }

    static func invalid(_ message: String) -> StorageError {
        StorageError(.invalidArgument, message)
    }

    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
