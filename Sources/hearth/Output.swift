import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// Buffered writes of JSON to a file descriptor (stdout unless a file is given).
final class Output {
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    private let capacity = 1 << 16

    /// Standard output.
    init() {
        fd = 1
        ownsDescriptor = false
    }

    /// Creates or truncates the file at `path`.
    init(path: String) throws {
        let opened = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard opened >= 0 else {
            throw CLIFailure.failed("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        fd = opened
        ownsDescriptor = true
    }

    deinit { if ownsDescriptor { close(fd) } }

    /// Writes `json` and a newline, and flushes.
    static func line(_ json: JSONValue) throws {
        let out = Output()
        out.append(json)
        out.append("\n")
        try out.flush()
    }

    func append(_ json: JSONValue) {
        json.serialize(into: &buffer)
    }

    func append(_ text: String) {
        buffer.append(contentsOf: text.utf8)
    }

    /// Appends `key` as a JSON string.
    func appendKey(_ key: String) {
        JSONWriter.writeString(key, into: &buffer)
    }

    /// Flushes when the buffer is full.
    func flushIfFull() throws {
        if buffer.count >= capacity { try flush() }
    }

    func flush() throws {
        var written = 0
        while written < buffer.count {
            let result = buffer[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if result < 0 {
                if errno == EINTR { continue }
                throw CLIFailure.failed("cannot write the output: \(String(cString: strerror(errno)))")
            }
            written += result
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
