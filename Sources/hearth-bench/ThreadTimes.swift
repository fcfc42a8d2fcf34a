#if canImport(Glibc)
import Glibc
#endif

/// One thread of a process as `/proc/<pid>/task/<tid>/schedstat` counts it: the nanoseconds it
/// ran on a core and the nanoseconds it was runnable but waited for one.
struct ThreadTime: Sendable {
    let name: String
    let ranNanoseconds: UInt64
    let waitedNanoseconds: UInt64
}

/// The threads of process `pid` by thread id (empty if `/proc` cannot be read).
func threadTimes(pid: Int32) -> [Int32: ThreadTime] {
    guard let directory = opendir("/proc/\(pid)/task") else { return [:] }
    defer { closedir(directory) }
    var threads: [Int32: ThreadTime] = [:]
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        guard let tid = Int32(name) else { continue }
        let base = "/proc/\(pid)/task/\(tid)"
        guard let schedstat = firstLine(of: "\(base)/schedstat") else { continue }
        let fields = schedstat.split(separator: " ").compactMap { UInt64($0) }
        guard fields.count >= 2 else { continue }
        threads[tid] = ThreadTime(
            name: firstLine(of: "\(base)/comm") ?? "?", ranNanoseconds: fields[0], waitedNanoseconds: fields[1])
    }
    return threads
}

/// This process's CPU time (user + system), in nanoseconds.
func ownCPUNanoseconds() -> UInt64 {
    var usage = rusage()
    guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
    func nanoseconds(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1000 }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// The first line of a small text file, without its line end.
func firstLine(of path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    guard fgets(&line, Int32(line.count), file) != nil else { return nil }
    return String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
