import Foundation
import HearthServer
import HearthStorage
import NIOConcurrencyHelpers
import XCTest

/// A disk that starts failing: writes are refused with `unavailable` and nothing half-applied,
/// reads continue, and a restart recovers every acknowledged write.
final class StorageFaultTests: XCTestCase {
    func testFailingDiskRefusesWritesKeepsReadsAndRecoversOnRestart() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = FailingDisk.configuration(directory)
        let disk = FailingDisk()
        let (server, c, listener) = try await startWatchedServer(on: disk, in: directory)

        disk.failWrites(true)
        let refused = try c.request(#"{"op":"set","path":"/k/b","value":2}"#)
        XCTAssertEqual(refused.errorCode, "unavailable")
        XCTAssertEqual(try c.request(#"{"op":"update","path":"/k","values":{"c":3}}"#).errorCode, "unavailable")
        // Nothing of the refused writes shows, and reads go on.
        let read = try c.request(#"{"op":"get","path":"/k"}"#)
        XCTAssertEqual(read["value"], json(#"{"a":1}"#))
        XCTAssertEqual(read["rev"], .int(1))
        // The listener saw no event for the refused writes.
        XCTAssertEqual(try listener.request(#"{"op":"ping","id":1}"#)["id"], .int(1))
        XCTAssertEqual(listener.events, [])
        // Even once the disk is back, the server refuses writes until it restarts.
        disk.failWrites(false)
        XCTAssertEqual(try c.request(#"{"op":"set","path":"/k/d","value":4}"#).errorCode, "unavailable")
        await server.shutdown()

        let restarted = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        let r = try TestClient(port: restarted.port)
        XCTAssertEqual(try r.request(#"{"op":"get","path":"/k"}"#)["value"], json(#"{"a":1}"#))
        XCTAssertEqual(try r.request(#"{"op":"set","path":"/k/e","value":5}"#)["rev"], .int(2))
        await restarted.shutdown()
    }

    /// Writes that no view watches change the tree in place; when the log refuses a batch of
    /// them (pipelined, so that one engine turn applies them all), every one is undone: new
    /// leaves, a leaf written below, the same place written twice, and a copied write among them.
    func testARefusedBatchOfInPlaceWritesIsUndone() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = FailingDisk()
        let server = try await disk.startServer(in: directory)
        let c = try TestClient(port: server.port)
        XCTAssertEqual(try c.request(#"{"op":"set","path":"/k","value":{"a":1,"b":{"c":2}}}"#)["rev"], .int(1))

        disk.failWrites(true)
        let pipelined = [
            #"{"op":"set","path":"/k/b/d","value":3,"id":1}"#,
            #"{"op":"set","path":"/k/a/x","value":4,"id":2}"#,
            #"{"op":"set","path":"/n/m","value":{"o":5},"id":3}"#,
            #"{"op":"set","path":"/k/b/d","value":6,"id":4}"#,
            #"{"op":"update","path":"/k","values":{"b/c":null,"e":7},"id":5}"#,
            #"{"op":"set","path":"/k/b/c","value":8,"id":6}"#,
        ]
        try c.sendRaw(Array(pipelined.map { $0 + "\n" }.joined().utf8))
        for id in 1...6 {
            let answer = try c.readResponse()
            XCTAssertEqual(answer["id"], .int(Int64(id)))
            XCTAssertEqual(answer.errorCode, "unavailable", "write \(id)")
        }
        let read = try c.request(#"{"op":"get","path":"/"}"#)
        XCTAssertEqual(read["value"], json(#"{"k":{"a":1,"b":{"c":2}}}"#))
        XCTAssertEqual(read["rev"], .int(1))
        await server.shutdown()
    }

    /// Under `fsync: always` the engine goes on while a batch is fsynced, but nothing that shows
    /// the batch leaves before the fsync ends: not its acknowledgement, not its events, not a
    /// read of another connection.
    func testNothingOfABatchLeavesBeforeItsFsyncEnds() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = FailingDisk()
        let (server, writer, listener) = try await startWatchedServer(on: disk, in: directory)
        let reader = try TestClient(port: server.port)

        disk.holdFsyncs()
        try writer.send(#"{"op":"set","path":"/k/b","value":2,"id":7}"#)
        try await Task.sleep(for: .milliseconds(200))
        try reader.send(#"{"op":"get","path":"/k","id":8}"#)
        XCTAssertThrowsError(try writer.readJSON(timeout: 0.3), "no acknowledgement before the fsync")
        XCTAssertThrowsError(try reader.readJSON(timeout: 0.1), "no read that shows the write before its fsync")
        XCTAssertThrowsError(try listener.readJSON(timeout: 0.1), "no event before the fsync")

        disk.releaseFsyncs()
        XCTAssertEqual(try writer.readResponse()["rev"], .int(2))
        XCTAssertEqual(try reader.readResponse()["value"], json(#"{"a":1,"b":2}"#))
        XCTAssertEqual(try listener.readJSON()["value"], json(#"{"a":1,"b":2}"#))
        await server.shutdown()
    }

    /// An fsync that fails after the engine went on: every batch it had not made durable is
    /// undone (the one being fsynced and those written meanwhile), their answers fail, a read
    /// never shows them, no event is sent, and a restart has only what was acknowledged.
    func testAFailedFsyncUndoesTheBatchesWrittenWhileItRan() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = FailingDisk()
        let (server, first, listener) = try await startWatchedServer(on: disk, in: directory)
        let second = try TestClient(port: server.port)
        let reader = try TestClient(port: server.port)

        disk.holdFsyncs()
        try first.send(#"{"op":"set","path":"/k/b","value":2}"#)
        try await Task.sleep(for: .milliseconds(100))
        try second.send(#"{"op":"update","path":"/k","values":{"a":null,"c":3}}"#)
        try second.send(#"{"op":"push","path":"/k","value":"pushed"}"#)
        try await Task.sleep(for: .milliseconds(100))
        try reader.send(#"{"op":"get","path":"/k"}"#)
        try await Task.sleep(for: .milliseconds(100))
        disk.failFsyncs(true)
        disk.releaseFsyncs()

        XCTAssertEqual(try first.readResponse().errorCode, "unavailable")
        XCTAssertEqual(try second.readResponse().errorCode, "unavailable")
        XCTAssertEqual(try second.readResponse().errorCode, "unavailable")
        let read = try reader.readResponse()
        if read.errorCode == nil { XCTAssertEqual(read["value"], json(#"{"a":1}"#)) }
        let after = try reader.request(#"{"op":"get","path":"/k"}"#)
        XCTAssertEqual(after["value"], json(#"{"a":1}"#))
        XCTAssertEqual(after["rev"], .int(1))
        XCTAssertEqual(try listener.request(#"{"op":"ping","id":1}"#)["id"], .int(1))
        XCTAssertEqual(listener.events, [], "no event of an undone write")
        disk.failFsyncs(false)
        XCTAssertEqual(try first.request(#"{"op":"set","path":"/k/d","value":4}"#).errorCode, "unavailable")
        await server.shutdown()

        let restarted = try await HearthServer.start(
            configuration: FailingDisk.configuration(directory), logger: quietLogger)
        let r = try TestClient(port: restarted.port)
        XCTAssertEqual(try r.request(#"{"op":"get","path":"/k"}"#)["value"], json(#"{"a":1}"#))
        XCTAssertEqual(try r.request(#"{"op":"set","path":"/k/e","value":5}"#)["rev"], .int(2))
        await restarted.shutdown()
    }

    /// onDisconnect registrations follow writes: one the log refuses is answered `unavailable`
    /// and never runs; those acknowledged before the failure stay in the log (their connections'
    /// disconnects can no longer run them) and run when the server restarts.
    func testFailingDiskRefusesRegistrationsAndKeepsTheAcknowledgedOnesForTheRestart() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = FailingDisk.configuration(directory)
        let disk = FailingDisk()
        let server = try await disk.startServer(in: directory)
        let c = try TestClient(port: server.port)
        XCTAssertEqual(
            try c.request(#"{"op":"onDisconnect","action":"set","path":"/presence/a","value":"offline"}"#)["ok"],
            .bool(true))
        disk.failWrites(true)
        XCTAssertEqual(
            try c.request(#"{"op":"onDisconnect","action":"set","path":"/presence/b","value":"offline"}"#).errorCode,
            "unavailable")
        disk.failWrites(false)
        XCTAssertEqual(
            try c.request(#"{"op":"onDisconnect","action":"cancel","path":"/presence/a"}"#).errorCode, "unavailable")
        c.close()
        let observer = try TestClient(port: server.port)
        XCTAssertEqual(try observer.request(#"{"op":"get","path":"/presence"}"#)["value"], .null)
        await server.shutdown()

        let restarted = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        let r = try TestClient(port: restarted.port)
        XCTAssertEqual(try r.request(#"{"op":"get","path":"/presence"}"#)["value"], json(#"{"a":"offline"}"#))
        await restarted.shutdown()
    }
}

extension StorageFaultTests {
    /// A server on `disk` over `directory`, a listener subscribed to `/k`, and `/k/a` set to 1
    /// through `writer` (acknowledged at rev 1, its event read).
    typealias WatchedServer = (server: HearthServer, writer: TestClient, listener: TestClient)

    func startWatchedServer(on disk: FailingDisk, in directory: String) async throws -> WatchedServer {
        let server = try await disk.startServer(in: directory)
        let writer = try TestClient(port: server.port)
        let listener = try TestClient(port: server.port)
        try listener.request(#"{"op":"subscribe","path":"/k"}"#)
        _ = try listener.readJSON()
        XCTAssertEqual(try writer.request(#"{"op":"set","path":"/k/a","value":1}"#)["rev"], .int(1))
        XCTAssertEqual(try listener.readJSON()["value"], json(#"{"a":1}"#))
        return (server, writer, listener)
    }
}

/// The real file system, with writes that fail on demand (as on a full disk).
final class FailingDisk: FileSystem {
    private let real = PosixFileSystem()
    private let failing = NIOLockedValueBox(false)
    private let failingFsyncs = NIOLockedValueBox(false)
    private let delay = NIOLockedValueBox(0.0)
    private let heldFsyncs = NIOLockedValueBox(false)

    func failWrites(_ on: Bool) { failing.withLockedValue { $0 = on } }

    /// Makes every fsync fail (EIO) while writes still succeed.
    func failFsyncs(_ on: Bool) { failingFsyncs.withLockedValue { $0 = on } }

    /// Makes every write take `seconds` longer (a slow disk).
    func delayWrites(by seconds: Double) { delay.withLockedValue { $0 = seconds } }

    /// Makes every fsync wait (at most ten seconds) until `releaseFsyncs` (a stalled disk).
    func holdFsyncs() { heldFsyncs.withLockedValue { $0 = true } }

    func releaseFsyncs() { heldFsyncs.withLockedValue { $0 = false } }

    /// A loopback server on free ports over `directory`, acknowledging writes only once fsynced.
    /// A server on this disk, with its data in `directory` (`configuration`).
    func startServer(in directory: String) async throws -> HearthServer {
        try await HearthServer.start(
            configuration: Self.configuration(directory), fileSystem: self, logger: quietLogger)
    }

    static func configuration(_ directory: String) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory = directory
        configuration.fsync = .always
        return configuration
    }

    func write(_ file: OpenFile, _ bytes: [UInt8], at offset: Int64) throws(StorageError) {
        if failing.withLockedValue({ $0 }) {
            throw StorageError.io(operation: "write", path: file.path, errno: 28)  // ENOSPC
        }
        let seconds = delay.withLockedValue { $0 }
        if seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
        try real.write(file, bytes, at: offset)
    }

    func open(_ path: String, mode: OpenMode) throws(StorageError) -> OpenFile { try real.open(path, mode: mode) }
    func close(_ file: OpenFile) { real.close(file) }
    func fsync(_ file: OpenFile) throws(StorageError) {
        let deadline = Date().addingTimeInterval(10)
        while heldFsyncs.withLockedValue({ $0 }), Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        if failingFsyncs.withLockedValue({ $0 }) {
            throw StorageError.io(operation: "fsync", path: file.path, errno: 5)  // EIO
        }
        try real.fsync(file)
    }
    func fsyncDirectory(_ path: String) throws(StorageError) { try real.fsyncDirectory(path) }
    func rename(_ source: String, to destination: String) throws(StorageError) {
        try real.rename(source, to: destination)
    }
    func remove(_ path: String) throws(StorageError) { try real.remove(path) }
    func listDirectory(_ path: String) throws(StorageError) -> [String] { try real.listDirectory(path) }
    func readFile(_ path: String) throws(StorageError) -> [UInt8] { try real.readFile(path) }
    func truncate(_ file: OpenFile, to size: Int64) throws(StorageError) { try real.truncate(file, to: size) }
    func size(_ file: OpenFile) throws(StorageError) -> Int64 { try real.size(file) }
    func makeDirectory(_ path: String) throws(StorageError) { try real.makeDirectory(path) }
    func fileExists(_ path: String) -> Bool { real.fileExists(path) }
    func lockExclusive(_ file: OpenFile) throws(StorageError) -> Bool { try real.lockExclusive(file) }
}
