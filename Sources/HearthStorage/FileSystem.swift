/// An open file of a `FileSystem`: its descriptor and the path it was opened with (for messages).
public struct OpenFile: Sendable, Hashable {
    public let descriptor: Int32
    public let path: String

    public init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }
}

/// How `FileSystem.open` opens a file.
public enum OpenMode: Sendable, Equatable {
    /// Read only; the file must exist.
    case read
    /// Read and write; the file must exist.
    case readWrite
    /// Read and write a new empty file: created, or truncated when it exists (temporary files).
    case createTruncate
    /// Read and write, created when missing, never truncated (`LOCK`).
    case createOrOpen
}

/// The file-system operations the storage uses: a seam so that tests can inject a fault at any
/// step. Every failure is thrown as a `StorageError` of kind `.io` naming the operation, path and
/// errno. Implementations must be safe to call from several threads at once (the engine appends
/// while the compaction thread writes a snapshot).
public protocol FileSystem: Sendable {
    /// Opens `path`.
    func open(_ path: String, mode: OpenMode) throws(StorageError) -> OpenFile
    /// Closes `file`, releasing any lock taken on it. Never fails.
    func close(_ file: OpenFile)
    /// Writes all of `bytes` at `offset`, with one `pwrite` unless the system writes short.
    func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws(StorageError)
    /// Forces the file's data (and the metadata needed to read it back) to disk.
    func fsync(_ file: OpenFile) throws(StorageError)
    /// Forces the directory's entries (creations, renames, removals) to disk.
    func fsyncDirectory(_ path: String) throws(StorageError)
    /// Atomically renames `source` to `destination`, replacing it.
    func rename(_ source: String, to destination: String) throws(StorageError)
    /// Removes a file.
    func remove(_ path: String) throws(StorageError)
    /// The names of the entries of a directory (not `.` or `..`).
    func listDirectory(_ path: String) throws(StorageError) -> [String]
    /// The whole content of a file.
    func readFile(_ path: String) throws(StorageError) -> [UInt8]
    /// Cuts `file` to `size` bytes.
    func truncate(_ file: OpenFile, to size: Int64) throws(StorageError)
    /// The current size of `file` in bytes.
    func size(_ file: OpenFile) throws(StorageError) -> Int64
    /// Creates a directory, and its missing parents with the same mode; succeeds when it
    /// already exists.
    func makeDirectory(_ path: String) throws(StorageError)
    /// Whether `path` exists.
    func fileExists(_ path: String) -> Bool
    /// Takes an exclusive advisory lock on `file` without waiting (`flock(LOCK_EX|LOCK_NB)`);
    /// false when another open file description holds it. Held until `close`.
    func lockExclusive(_ file: OpenFile) throws(StorageError) -> Bool
}

extension FileSystem {
    /// Writes `bytes` to a new file `path` atomically: a temporary file is written and fsynced,
    /// renamed over `path`, and the directory fsynced. On failure the temporary file is removed
    /// (best effort) and `path` is unchanged unless the rename already happened.
    public func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws(StorageError) {
        let temporary = path + ".tmp"
        let file = try open(temporary, mode: .createTruncate)
        do {
            try write(file, bytes, at: 0)
            try fsync(file)
        } catch {
            close(file)
            try? remove(temporary)
            throw error
        }
        close(file)
        do {
            try rename(temporary, to: path)
        } catch {
            try? remove(temporary)
            throw error
        }
        try fsyncDirectory(directory)
    }

    /// Copies `source` to `destination` and fsyncs the copy.
    func copyFile(_ source: String, to destination: String) throws(StorageError) {
        let bytes = try readFile(source)
        let file = try open(destination, mode: .createTruncate)
        defer { close(file) }
        try write(file, bytes, at: 0)
        try fsync(file)
    }
}
