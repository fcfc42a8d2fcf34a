#if canImport(Glibc)
import Glibc
#endif

/// The resident set size of process `pid` in bytes (`VmRSS` of `/proc/<pid>/status`), or nil if
/// it cannot be read.
func residentBytes(pid: Int32) -> Int? {
    guard let file = fopen("/proc/\(pid)/status", "r") else { return nil }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard text.hasPrefix("VmRSS:") else { continue }
        let kilobytes = text.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap
        { Int($0) }
        return kilobytes.map { $0 * 1024 }
    }
    return nil
}

/// Raises this process's open-file limit to its hard limit and returns the new limit.
func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    return Int(clamping: limit.rlim_cur)
}
