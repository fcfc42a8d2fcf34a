public import HearthCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The log of one database as a reader behind the engine sees it: the data directory's
/// snapshots and segments, and those the storage kept for it in the retained directory
/// (`StorageOptions.retainedLogDirectory`). A trigger runner rebuilds the tree at its cursor
/// from here, reads the writes after it, and prunes what no cursor needs.
///
/// Not thread-safe: one reader's thread at a time. It only reads the data directory (the
/// engine goes on appending to its last segment), and removes files only from the retained one.
public final class LogArchive {
    public let dataDirectory: String
    public let retainedDirectory: String
    let fileSystem: any FileSystem

    public init(dataDirectory: String, retainedDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) {
        self.dataDirectory = dataDirectory
        self.retainedDirectory = retainedDirectory
        self.fileSystem = fileSystem
    }

    /// A snapshot or segment file, wherever it is.
    struct File {
        let path: String
        let rev: UInt64
        let retained: Bool
    }

    /// The snapshots and the segments of both directories, by revision (a file in both is
    /// listed once, from the data directory).
    func files() -> (snapshots: [File], segments: [File]) {
        var snapshots: [UInt64: File] = [:]
        var segments: [UInt64: File] = [:]
        for (directory, retained) in [(retainedDirectory, true), (dataDirectory, false)] {
            let names = (try? fileSystem.listDirectory(directory)) ?? []
            for name in names where !DataFiles.isTemporary(name) {
                let path = DataFiles.path(directory, name)
                if let rev = DataFiles.snapshotRev(name) {
                    snapshots[rev] = File(path: path, rev: rev, retained: retained)
                } else if let rev = DataFiles.segmentFirstRev(name) {
                    segments[rev] = File(path: path, rev: rev, retained: retained)
                }
            }
        }
        return (snapshots.values.sorted { $0.rev < $1.rev }, segments.values.sorted { $0.rev < $1.rev })
    }

    /// The revision of the newest snapshot in the data directory (0 when it has none): the
    /// oldest revision a reader can always start from.
    public var currentSnapshotRev: UInt64 {
        files().snapshots.last { !$0.retained }?.rev ?? 0
    }

    /// The tree at revision `rev`: the newest snapshot at or before it, with the logged writes
    /// after it applied. Nil when the files that would rebuild it are gone (no snapshot at or
    /// before `rev`, or a gap in the segments after it).
    public func tree(at rev: UInt64) throws(StorageError) -> Node? {
        let (snapshots, segments) = files()
        var root = Node.empty
        var base: UInt64 = 0
        if let snapshot = snapshots.last(where: { $0.rev <= rev }) {
            let bytes = try fileSystem.readFile(snapshot.path)
            do { root = try SnapshotFile.decode(bytes, rev: snapshot.rev).root } catch {
                throw .corrupt(
                    file: snapshot.path, offset: error.offset, reason: error.reason, directory: dataDirectory)
            }
            base = snapshot.rev
        } else if segments.first?.rev != 1, rev > 0 {
            return nil
        }
        guard base < rev else { return root }
        var reader = reader(after: base)
        let replay = ReplayTree(root)
        while let write = try reader.next(through: rev) {
            for (path, node) in write.overwrites { replay.set(path.segments[...], to: node) }
        }
        guard reader.nextRev == rev + 1 else { return nil }
        return replay.build()
    }

    /// A reader of the writes after revision `rev`.
    public func reader(after rev: UInt64) -> LogReader {
        LogReader(archive: self, nextRev: rev + 1)
    }

    /// Bytes of the retained directory's files.
    public var retainedBytes: Int64 {
        files().snapshots.filter(\.retained).reduce(0) { $0 + Self.size($1.path) }
            + files().segments.filter(\.retained).reduce(0) { $0 + Self.size($1.path) }
    }

    /// When the oldest file of the retained directory was written (seconds since the epoch);
    /// nil when it holds none.
    public var oldestRetainedTime: Int64? {
        let (snapshots, segments) = files()
        return (snapshots + segments).filter(\.retained).compactMap { Self.modificationTime($0.path) }.min()
    }

    /// Removes the retained files a reader at `rev` or later no longer needs: every snapshot but
    /// the newest at or before `rev`, and the segments whose writes that snapshot holds.
    public func prune(keepingFrom rev: UInt64) {
        let (snapshots, segments) = files()
        let base = snapshots.last { $0.rev <= rev }?.rev ?? 0
        var obsolete = snapshots.filter { $0.retained && $0.rev != base }.map(\.path)
        for (index, segment) in segments.enumerated().dropLast()
        where segment.retained && segments[index + 1].rev <= base + 1 {
            obsolete.append(segment.path)
        }
        for path in obsolete { try? fileSystem.remove(path) }
        if !obsolete.isEmpty { try? fileSystem.fsyncDirectory(retainedDirectory) }
    }

    /// Removes every retained file (the backlog bound was passed).
    public func dropRetained() {
        let names = (try? fileSystem.listDirectory(retainedDirectory)) ?? []
        for name in names { try? fileSystem.remove(DataFiles.path(retainedDirectory, name)) }
        try? fileSystem.fsyncDirectory(retainedDirectory)
    }

    static func size(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    static func modificationTime(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_mtim.tv_sec) : nil
    }
}

/// Reads a database's logged writes in order, a segment at a time, from where the previous
/// call stopped: records the engine appends later are read by later calls. Only revisions up to
/// the limit given to `next` are read, which must be records the log holds for good (a record
/// past it may still be partly written).
public struct LogReader {
    let archive: LogArchive
    /// The revision of the next write to return.
    public private(set) var nextRev: UInt64
    private var descriptor: Int32 = -1
    private var segmentPath = ""
    /// Bytes of the open segment from `bufferStart` on, as far as they were read.
    private var buffer: [UInt8] = []
    private var bufferStart: Int64 = 0
    /// Where the next record starts in `buffer`.
    private var position = 0
    private var previousPath: Path?

    init(archive: LogArchive, nextRev: UInt64) {
        self.archive = archive
        self.nextRev = nextRev
    }

    /// Closes the open segment.
    public mutating func close() {
        if descriptor >= 0 { closeDescriptor(descriptor) }
        descriptor = -1
    }

    /// The next write, when its revision is at most `limit`; nil when there is none yet.
    /// Throws when the log has a gap (its files were removed) or a damaged record.
    public mutating func next(through limit: UInt64) throws(StorageError) -> CommittedWrite? {
        guard nextRev <= limit else { return nil }
        if descriptor < 0 { try open(containing: nextRev) }
        var switched = false
        var refreshed = false
        while true {
            switch parse() {
            case .record(let rev, let payload, let end, _):
                let range = (payload.lowerBound)..<(payload.upperBound)
                position = end
                if rev < nextRev || RegistrationPayload.isRegistration(buffer, range) { continue }
                guard rev == nextRev else {
                    throw .corrupt(
                        file: segmentPath, offset: bufferStart + Int64(range.lowerBound),
                        reason:
                            "expected the record of rev \(nextRev), found rev \(rev)", directory: archive.dataDirectory)
                }
                let write: CommittedWrite
                do { write = try WritePayload.decode(buffer, range, rev: rev, previousPath: previousPath) } catch {
                    throw .corrupt(
                        file: segmentPath, offset: bufferStart + Int64(range.lowerBound) + error.offset,
                        reason: error.reason, directory: archive.dataDirectory)
                }
                previousPath = write.overwrites.last?.path ?? previousPath
                nextRev = rev + 1
                return write
            case .needMore:
                if try readMore() { continue }
                fallthrough
            case .end:
                // What was read past the last record may be the zeros of a preallocated segment
                // that the engine has written over since: read it again once.
                if !refreshed {
                    refreshed = true
                    buffer.removeSubrange(position...)
                    if try readMore() { continue }
                }
                // Revision `nextRev` is logged, so the segment that starts with it exists now.
                guard !switched, let next = archive.files().segments.first(where: { $0.rev == nextRev }),
                    next.path != segmentPath
                else {
                    throw .corrupt(
                        file: segmentPath, offset: bufferStart + Int64(position),
                        reason: "the record of rev \(nextRev) is missing", directory: archive.dataDirectory)
                }
                try open(containing: nextRev)
                switched = true
            }
        }
    }

    private enum Step {
        case record(rev: UInt64, payload: Range<Int>, end: Int, continues: Bool)
        case needMore
        case end
    }

    /// The record at `position`, or whether more bytes must be read first.
    private func parse() -> Step {
        let available = buffer.count - position
        guard available >= WALFormat.recordHeaderSize else { return .needMore }
        if buffer[position..<(position + WALFormat.recordHeaderSize)].allSatisfy({ $0 == 0 }) { return .end }
        let length = Int(buffer.loadUInt32(at: position) & ~WALFormat.continuesFlag)
        guard available >= WALFormat.recordHeaderSize + length else { return .needMore }
        switch WALFormat.parseRecord(buffer, at: position) {
        case .record(let rev, let payload, let end, let continues):
            return .record(rev: rev, payload: payload, end: end, continues: continues)
        case .invalid:
            return .end
        }
    }

    /// Reads the next chunk of the open segment after what `buffer` holds, dropping what was
    /// parsed already. False at the end of the file.
    private mutating func readMore() throws(StorageError) -> Bool {
        if position > 0 {
            buffer.removeFirst(position)
            bufferStart += Int64(position)
            position = 0
        }
        let chunk = 1 << 20
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        let read = buffer.withUnsafeMutableBytes { raw -> Int in
            guard let base = raw.baseAddress else { return -1 }
            return pread(descriptor, base + old, chunk, off_t(bufferStart + Int64(old)))
        }
        guard read >= 0 else {
            buffer.removeLast(chunk)
            throw .io(operation: "read", path: segmentPath, errno: errno)
        }
        buffer.removeLast(chunk - read)
        return read > 0
    }

    /// Opens the segment that holds revision `rev`: the one with the highest first revision at
    /// or below it.
    private mutating func open(containing rev: UInt64) throws(StorageError) {
        close()
        let segments = archive.files().segments
        guard let segment = segments.last(where: { $0.rev <= rev }),
            segments.first(where: { $0.rev > segment.rev }).map({ $0.rev > rev }) ?? true
        else {
            throw .corrupt(
                file: archive.dataDirectory, offset: 0, reason: "no log segment holds rev \(rev) any more",
                directory: archive.dataDirectory)
        }
        let opened = openReadOnly(segment.path)
        guard opened >= 0 else { throw .io(operation: "open", path: segment.path, errno: errno) }
        descriptor = opened
        segmentPath = segment.path
        buffer = []
        bufferStart = Int64(WALFormat.segmentHeaderSize)
        position = 0
        previousPath = nil
    }
}

private func openReadOnly(_ path: String) -> Int32 {
    open(path, O_RDONLY | O_CLOEXEC)
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
