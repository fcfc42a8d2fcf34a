/// The names of the files in a data directory (docs/STORAGE.md "Files").
enum DataFiles {
    static let manifest = "MANIFEST"
    static let lock = "LOCK"
    static let temporarySuffix = ".tmp"
    static let backupPrefix = "backup-"

    private static let snapshotPrefix = "snapshot-"
    private static let segmentPrefix = "wal-"
    private static let segmentSuffix = ".log"

    /// `snapshot-<rev>`, the revision zero-padded to 20 digits so that names sort by revision.
    static func snapshotName(_ rev: UInt64) -> String {
        snapshotPrefix + padded(rev)
    }

    /// `wal-<first rev>.log`, zero-padded like snapshots.
    static func segmentName(_ firstRev: UInt64) -> String {
        segmentPrefix + padded(firstRev) + segmentSuffix
    }

    /// The revision of a snapshot file name, or nil for other names.
    static func snapshotRev(_ name: String) -> UInt64? {
        guard name.hasPrefix(snapshotPrefix) else { return nil }
        return number(name.dropFirst(snapshotPrefix.count))
    }

    /// The first revision of a WAL segment file name, or nil for other names.
    static func segmentFirstRev(_ name: String) -> UInt64? {
        guard name.hasPrefix(segmentPrefix), name.hasSuffix(segmentSuffix) else { return nil }
        return number(name.dropFirst(segmentPrefix.count).dropLast(segmentSuffix.count))
    }

    static func isTemporary(_ name: String) -> Bool {
        name.hasSuffix(temporarySuffix)
    }

    static func path(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The files made obsolete by the snapshot at `snapshotRev`: every other snapshot, and every
    /// segment whose successor starts at or before `snapshotRev + 1` (all its records are in the
    /// snapshot).
    static func obsolete(names: [String], snapshotRev base: UInt64) -> [String] {
        var result: [String] = []
        for name in names {
            if let rev = snapshotRev(name), rev != base { result.append(name) }
        }
        let segments = names.compactMap { name in segmentFirstRev(name).map { (name, $0) } }.sorted { $0.1 < $1.1 }
        for (index, segment) in segments.enumerated().dropLast() where segments[index + 1].1 <= base + 1 {
            result.append(segment.0)
        }
        return result
    }

    private static func padded(_ value: UInt64) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    private static func number(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return UInt64(text)
    }
}
