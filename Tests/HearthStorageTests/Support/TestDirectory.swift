import Foundation

/// A unique empty directory under /tmp, removed by `remove()`.
struct TestDirectory {
    let path: String

    init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        path = "/tmp/hearth-storage-tests-\(safe)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// The names of the entries, sorted.
    func names() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// The WAL segment names, in order.
    func segments() -> [String] { names().filter { $0.hasPrefix("wal-") && $0.hasSuffix(".log") } }

    func snapshots() -> [String] { names().filter { $0.hasPrefix("snapshot-") && !$0.hasSuffix(".tmp") } }

    func read(_ name: String) -> [UInt8] {
        (try? Data(contentsOf: URL(fileURLWithPath: file(name)))).map { [UInt8]($0) } ?? []
    }

    /// A segment's bytes up to the end of its last record, without the zeros it is preallocated
    /// with (a record never ends in a zero byte; the segment header does, so it is kept whole).
    func log(_ name: String) -> [UInt8] {
        let bytes = read(name)
        let end = (bytes.lastIndex { $0 != 0 }).map { $0 + 1 } ?? 0
        return Array(bytes[..<min(bytes.count, max(end, 16))])
    }

    /// Where the next record of a segment goes: `log(name).count`.
    func logEnd(_ name: String) -> Int { log(name).count }

    func write(_ name: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: file(name), contents: Data(bytes))
    }
}
