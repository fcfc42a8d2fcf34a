#if canImport(Glibc)
import Glibc
#endif

/// The whole content of the file at `path`, or of stdin when `path` is nil or `-`.
func readAll(path: String?) throws -> [UInt8] {
    let name = path ?? "-"
    let fd = name == "-" ? 0 : open(name, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw CLIFailure.failed("cannot read \(name): \(String(cString: strerror(errno)))") }
    defer { if fd != 0 { close(fd) } }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return bytes }
        if count < 0 {
            if errno == EINTR { continue }
            throw CLIFailure.failed("cannot read \(name == "-" ? "stdin" : name): \(String(cString: strerror(errno)))")
        }
        bytes.append(contentsOf: chunk[0..<count])
    }
}
