import HearthCore
import HearthStorage
import XCTest

/// Write ids in the log and in snapshots (docs/STORAGE.md "Write ids"): a tagged write's record
/// starts with its tag, untagged records are byte for byte what they were, recovery hands the
/// ids back (the snapshot's, then the log's after it), and `hearth check` reads both.
final class WriteIDRecordTests: XCTestCase {
    let logs = LogCapture()

    func tag(_ text: String, _ kind: WriteTag.Kind, at: Int64 = 1_700_000_000_000) throws -> WriteTag {
        WriteTag(id: try XCTUnwrap(WriteID(text)), kind: kind, at: at)
    }

    func testTaggedRecordBytesAndRecovery() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        let counter = try Path.parse("/n")
        let pushed = try Path.parse("/list/-P70mOSMANWbJGU10buX")
        try storage.append([
            CommittedWrite(rev: 1, overwrites: [(counter, .leaf(.number(.int(1))))]),
            CommittedWrite(
                rev: 2, overwrites: [(pushed, .leaf(.string("x")))], tag: try tag("app-1:7", .push, at: 5)),
            CommittedWrite(rev: 3, overwrites: [], tag: try tag("app-1:8", .write, at: 6)),
        ])
        try storage.close()
        let bytes = dir.read("wal-00000000000000000001.log")
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.contains(#"[["/n",1]]"#), "an untagged write is encoded as before")
        XCTAssertTrue(
            text.contains(#"[{"wid":"app-1:7","kind":"push","at":5},["/list/-P70mOSMANWbJGU10buX","x"]]"#), text)
        XCTAssertTrue(text.contains(#"[{"wid":"app-1:8","kind":"write","at":6}]"#), text)
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK)

        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        XCTAssertEqual(recovered.rev, 3)
        XCTAssertEqual(recovered.root.child(at: pushed), .leaf(.string("x")))
        let ids = reopened.takeRecoveredWriteIDs()
        XCTAssertEqual(
            ids.entries,
            [
                WriteIDLog.Entry(tag: try tag("app-1:7", .push, at: 5), rev: 2, pushKey: "-P70mOSMANWbJGU10buX"),
                WriteIDLog.Entry(tag: try tag("app-1:8", .write, at: 6), rev: 3, pushKey: nil),
            ])
        XCTAssertTrue(reopened.takeRecoveredWriteIDs().isEmpty, "handed over once")
        try reopened.close()
    }

    /// The snapshot carries the window the server hands it; the log's tagged writes after the
    /// snapshot follow it, and those before it are not read again.
    func testSnapshotKeepsTheWindowAndTheLogAddsToIt() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        let path = try Path.parse("/t")
        try storage.append([
            CommittedWrite(rev: 1, overwrites: [(path, .leaf(.number(.int(1))))], tag: try tag("c:1", .transaction))
        ])
        let window = WriteIDLog(
            entries: [WriteIDLog.Entry(tag: try tag("c:1", .transaction), rev: 1, pushKey: nil)], evicted: ["old": 41])
        storage.compact(root: Node.empty.setting(path, to: .leaf(.number(.int(1)))), rev: 1) { window }
        storage.waitForCompaction()
        try storage.append([
            CommittedWrite(rev: 2, overwrites: [(path, .leaf(.number(.int(2))))], tag: try tag("c:2", .write))
        ])
        try storage.close()
        let snapshot = dir.read(try XCTUnwrap(dir.snapshots().last))
        XCTAssertEqual(snapshot[4], 3, "snapshots are written as version 3")
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK)

        storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        let ids = storage.takeRecoveredWriteIDs()
        XCTAssertEqual(ids.evicted, ["old": 41])
        XCTAssertEqual(ids.entries.map(\.tag.id.description), ["c:1", "c:2"])
        XCTAssertEqual(ids.entries.map(\.rev), [1, 2])
        XCTAssertEqual(ids.entries.first?.tag.kind, .transaction)
        try storage.close()
    }

    /// A snapshot written before write ids (version 2: no write-id section) still loads.
    func testVersionTwoSnapshotsStillLoad() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        var writes = Workload(seed: 41)
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append(writes.batch(5))
        storage.compact(root: writes.database.root, rev: 5)
        storage.waitForCompaction()
        try storage.append(writes.batch(2))
        try storage.close()
        let name = try XCTUnwrap(dir.snapshots().last)
        var file = dir.read(name)
        func u64(_ at: Int) -> Int { Int(file[at..<(at + 8)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
        // Header and tree, then the onDisconnect section; cut the write-id section after it.
        let treeEnd = 40 + u64(24)
        let sectionEnd = treeEnd + 24 + u64(treeEnd + 8)
        XCTAssertLessThan(sectionEnd, file.count)
        file.removeSubrange(sectionEnd...)
        file[4] = 2
        let crc = TestCRC32.checksum(file[0..<36])
        for i in 0..<4 { file[36 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        dir.write(name, file)
        XCTAssertTrue(StorageChecker.check(directory: dir.path).isOK)
        let (reopened, recovered) = try Storage.open(directory: dir.path, logger: logs.logger)
        defer { try? reopened.close() }
        XCTAssertEqual(recovered.rev, 7)
        XCTAssertEqual(recovered.root, writes.database.root)
        XCTAssertTrue(reopened.takeRecoveredWriteIDs().isEmpty)
    }

    func testADamagedTagIsReportedWithItsRecord() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try Storage.open(directory: dir.path, logger: logs.logger).storage
        try storage.append([
            CommittedWrite(
                rev: 1, overwrites: [(try Path.parse("/a"), .leaf(.bool(true)))], tag: try tag("c:1", .write)),
            CommittedWrite(rev: 2, overwrites: [(try Path.parse("/b"), .leaf(.bool(true)))]),
        ])
        try storage.close()
        // Rewrite the first record's tag as one that is not a write id, with valid checksums.
        let name = "wal-00000000000000000001.log"
        var bytes = dir.read(name)
        let text = String(decoding: bytes, as: UTF8.self)
        let range = try XCTUnwrap(text.range(of: #""c:1""#))
        let offset = text.utf8.distance(from: text.startIndex, to: range.lowerBound)
        bytes[offset + 1] = UInt8(ascii: "?")
        let payload = 16 + 20
        let length = Int(bytes[16]) | Int(bytes[17]) << 8
        let crc = TestCRC32.checksum(bytes[24..<32] + bytes[payload..<(payload + length)])
        for i in 0..<4 { bytes[20 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        let headerCRC = TestCRC32.checksum(bytes[16..<32])
        for i in 0..<4 { bytes[32 + i] = UInt8(truncatingIfNeeded: headerCRC >> (8 * UInt32(i))) }
        dir.write(name, bytes)
        let report = StorageChecker.check(directory: dir.path)
        XCTAssertFalse(report.isOK)
        XCTAssertTrue(report.problem?.reason.contains("write id") == true, report.description)
        XCTAssertEqual(report.rev, 0)
    }
}
