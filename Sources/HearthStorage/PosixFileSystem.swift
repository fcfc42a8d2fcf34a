#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system, through POSIX calls. `fsync` is `fdatasync` where available (the data
/// and the file size, not the timestamps).
public struct PosixFileSystem: FileSystem {
    public init() {}

    public func open(_ path: String, mode: OpenMode) throws(StorageError) -> OpenFile {
        let flags: Int32
        switch mode {
        case .read: flags = O_RDONLY
        case .readWrite: flags = O_RDWR
        case .createTruncate: flags = O_RDWR | O_CREAT | O_TRUNC
        case .createOrOpen: flags = O_RDWR | O_CREAT
        }
        let fd = retrying { systemOpen(path, flags | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        return OpenFile(descriptor: fd, path: path)
    }

    public func close(_ file: OpenFile) {
        _ = systemClose(file.descriptor)
    }

    public func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws(StorageError) {
        let failure: Int32? = bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = pwrite(
                    file.descriptor, buffer.baseAddress.map { $0 + done }, buffer.count - done,
                    off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if n == 0 { return EIO }
                done += n
            }
            return nil
        }
        if let failure { throw .io(operation: "write", path: file.path, errno: failure) }
    }

    public func fsync(_ file: OpenFile) throws(StorageError) {
        #if os(Linux)
        let result = retrying { fdatasync(file.descriptor) }
        #else
        let result = retrying { systemFsync(file.descriptor) }
        #endif
        guard result == 0 else { throw .io(operation: "fsync", path: file.path, errno: errno) }
    }

    public func fsyncDirectory(_ path: String) throws(StorageError) {
        let fd = retrying { systemOpen(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw .io(operation: "open directory", path: path, errno: errno) }
        defer { _ = systemClose(fd) }
        guard retrying({ systemFsync(fd) }) == 0 else {
            throw .io(operation: "fsync directory", path: path, errno: errno)
        }
    }

    public func rename(_ source: String, to destination: String) throws(StorageError) {
        guard systemRename(source, destination) == 0 else {
            throw .io(operation: "rename to \(destination)", path: source, errno: errno)
        }
    }

    public func remove(_ path: String) throws(StorageError) {
        guard unlink(path) == 0 else { throw .io(operation: "remove", path: path, errno: errno) }
    }

    public func listDirectory(_ path: String) throws(StorageError) -> [String] {
        guard let dir = opendir(path) else { throw .io(operation: "list directory", path: path, errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: pointer.pointee)) {
                    String(cString: $0)
                }
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    public func readFile(_ path: String) throws(StorageError) -> [UInt8] {
        let file = try open(path, mode: .read)
        defer { close(file) }
        let expected = Int(try size(file))
        var result: [UInt8] = []
        var failure: Int32?
        // Read the size fstat reported, then on until end of file in case the file grew.
        var chunkSize = max(expected, 1)
        while true {
            let offset = result.count
            let chunk = [UInt8](unsafeUninitializedCapacity: chunkSize) { buffer, count in
                count = 0
                while count < buffer.count {
                    let n = pread(
                        file.descriptor, buffer.baseAddress.map { $0 + count }, buffer.count - count,
                        off_t(offset + count))
                    if n < 0 {
                        if errno == EINTR { continue }
                        failure = errno
                        return
                    }
                    if n == 0 { return }
                    count += n
                }
            }
            if let failure { throw .io(operation: "read", path: path, errno: failure) }
            if result.isEmpty { result = chunk } else { result.append(contentsOf: chunk) }
            if chunk.count < chunkSize { return result }
            chunkSize = 64 * 1024
        }
    }

    public func truncate(_ file: OpenFile, to size: Int64) throws(StorageError) {
        guard retrying({ ftruncate(file.descriptor, off_t(size)) }) == 0 else {
            throw .io(operation: "truncate", path: file.path, errno: errno)
        }
    }

    public func size(_ file: OpenFile) throws(StorageError) -> Int64 {
        var info = stat()
        guard fstat(file.descriptor, &info) == 0 else { throw .io(operation: "stat", path: file.path, errno: errno) }
        return Int64(info.st_size)
    }

    public func makeDirectory(_ path: String) throws(StorageError) {
        if mkdir(path, 0o755) == 0 { return }
        var code = errno
        // A missing parent is created first, with the same mode (`--data-dir /srv/hearth/db`
        // without /srv/hearth), then the directory itself.
        if code == ENOENT, let slash = path.dropLast().lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectory(String(path[..<slash]))
            if mkdir(path, 0o755) == 0 { return }
            code = errno
        }
        var info = stat()
        if code == EEXIST, stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return }
        throw .io(operation: "create directory", path: path, errno: code)
    }

    public func fileExists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    public func lockExclusive(_ file: OpenFile) throws(StorageError) -> Bool {
        if retrying({ flock(file.descriptor, LOCK_EX | LOCK_NB) }) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw .io(operation: "lock", path: file.path, errno: errno)
    }

    /// Repeats a system call interrupted by a signal.
    private func retrying(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result == -1, errno == EINTR { continue }
            return result
        }
    }
}

// The C calls whose names the methods above shadow.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
private func systemFsync(_ fd: Int32) -> Int32 { fsync(fd) }
private func systemRename(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }
