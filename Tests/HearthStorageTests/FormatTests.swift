import HearthCore
import HearthJSON
import HearthStorage
import Logging
import XCTest

/// The bytes on disk are exactly those docs/STORAGE.md shows.
final class FormatTests: XCTestCase {
    func testTheDocumentedExampleSegment() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try Storage.open(directory: dir.path, logger: LogCapture().logger).storage
        let greeting = try Path.parse("/greeting")
        let priority = try Path.parse("/greeting/.priority", allowPriority: true)
        try storage.append([
            CommittedWrite(rev: 1, overwrites: [(greeting, .leaf(.string("hi")))]),
            CommittedWrite(rev: 2, overwrites: [(priority, .leaf(.number(.int(7))))]),
        ])
        try storage.close()
        let bytes = dir.log("wal-00000000000000000001.log")
        let expected = """
            48 57 41 4c 01 00 00 00 01 00 00 00 00 00 00 00
            14 00 00 80 56 52 fe 9f 01 00 00 00 00 00 00 00 09 b6 50 5a
            5b 5b 22 2f 67 72 65 65 74 69 6e 67 22 2c 22 68 69 22 5d 5d
            1b 00 00 00 ad 1f cd fe 02 00 00 00 00 00 00 00 e9 41 40 1a
            5b 5b 22 2f 67 72 65 65 74 69 6e 67 2f 2e 70 72 69 6f 72 69 74 79 22 2c 37 5d 5d
            """
        let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
        XCTAssertEqual(
            hex.joined(separator: " "), expected.split(whereSeparator: \.isWhitespace).joined(separator: " "))
    }

    /// docs/STORAGE.md "onDisconnect records": a write and the registration that follows it in
    /// one batch; the registration's record carries the write's rev and takes none.
    func testTheDocumentedOnDisconnectRecord() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try Storage.open(directory: dir.path, logger: LogCapture().logger).storage
        let alice = try Path.parse("/presence/alice")
        var queue = OnDisconnectQueue()
        var nextID: UInt64 = 1
        let change = queue.set(alice, .string("offline"), nextID: &nextID)
        try storage.append([
            .write(CommittedWrite(rev: 1, overwrites: [(alice, .leaf(.string("online")))])), .onDisconnect(change),
        ])
        try storage.close()
        let bytes = dir.log("wal-00000000000000000001.log")
        XCTAssertEqual(bytes.count, 66 + 121)
        let expected = """
            65 00 00 00 d9 45 90 d6 01 00 00 00 00 00 00 00 d0 11 b5 a3
            """
        let hex = bytes[66..<86].map {
            String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
        }
        XCTAssertEqual(
            hex.joined(separator: " "), expected.split(whereSeparator: \.isWhitespace).joined(separator: " "))
        XCTAssertEqual(
            String(decoding: bytes[86...], as: UTF8.self),
            #"{"onDisconnect":{"put":[{"id":1,"owner":1,"path":"/presence/alice","value":"offline"}],"removed":[]}}"#)
    }

    func testManifestAndFileNames() throws {
        let dir = TestDirectory()
        defer { dir.remove() }
        let storage = try Storage.open(directory: dir.path, logger: LogCapture().logger).storage
        storage.compact(root: .leaf(.bool(true)), rev: 0)
        try storage.close()
        XCTAssertEqual(
            dir.names(), ["LOCK", "MANIFEST", "snapshot-00000000000000000000", "wal-00000000000000000001.log"])
        XCTAssertEqual(
            String(decoding: dir.read("MANIFEST"), as: UTF8.self),
            "{\"format\":1,\"snapshot\":\"snapshot-00000000000000000000\",\"rev\":0}\n")
        let snapshot = dir.read("snapshot-00000000000000000000")
        XCTAssertEqual(Array(snapshot[0..<4]), Array("HSNP".utf8))
        XCTAssertEqual(snapshot[16], 4, "JSON bytes: true")
    }
}
