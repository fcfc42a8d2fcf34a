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

    func write(_ name: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: file(name), contents: Data(bytes))
    }
}
