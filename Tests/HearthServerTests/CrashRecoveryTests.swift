import Foundation
import HearthJSON
import XCTest

/// Process-level crash test: the real `hearthd` with `fsync: always`, concurrent writers, `kill -9`
/// at random moments, restart on the same directory, and every acknowledged write must be there.
/// Each writer also keeps a presence (`online`, with an onDisconnect `offline` and a run counter):
/// after every restart no acknowledged presence is still `online`, and no onDisconnect ran twice.
final class CrashRecoveryTests: XCTestCase {
    func testKillNineNeverLosesAnAcknowledgedWrite() throws {
        let binary = try HearthdProcess.binaryURL()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        var rng = SystemRandomNumberGenerator()
        let acknowledged = AckLog()
        // Presences whose onDisconnect registration was acknowledged.
        let presences = AckLog()
        var lastRev: Int64 = 0
        let started = Date()
        var cycle = 0
        while cycle < 10 && Date().timeIntervalSince(started) < 60 {
            cycle += 1
            let server = try HearthdProcess.start(binary: binary, dataDir: dataDir.path)
            // Everything acknowledged before must be there, and rev must not go backwards.
            let checker = try TestClient(port: server.port)
            let state = try checker.request(#"{"op":"get","path":"/"}"#)
            let rev = try XCTUnwrap(state["rev"]?.int64Value)
            XCTAssertGreaterThanOrEqual(rev, lastRev, "rev went backwards in cycle \(cycle)")
            XCTAssertGreaterThanOrEqual(rev, acknowledged.maxRev)
            lastRev = rev
            for (path, value) in acknowledged.all {
                XCTAssertEqual(
                    state["value"]?[path], .int(value), "acknowledged write at /\(path) lost (cycle \(cycle))")
            }
            Self.checkPresences(state["value"], presences, cycle: cycle)
            checker.close()

            let writers = 4
            let killAfter = Double.random(in: 0.05...0.4, using: &rng)
            let port = server.port
            let cycleNumber = cycle
            let group = DispatchGroup()
            for w in 0..<writers {
                group.enter()
                Thread {
                    defer { group.leave() }
                    guard let c = try? TestClient(port: port) else { return }
                    let presence = "c\(cycleNumber)w\(w)"
                    guard
                        let online = try? c.request(
                            #"{"op":"set","path":"/presence/\#(presence)","value":"online"}"#),
                        online["ok"] == .bool(true),
                        let registered = try? c.request(
                            #"{"op":"onDisconnect","action":"update","path":"/","values":{"presence/\#(presence)":"offline","runs/\#(presence)":{".sv":{"increment":1}}}}"#
                        ),
                        registered["ok"] == .bool(true)
                    else { return }
                    presences.record(presence, 1, rev: 0)
                    var seq = 0
                    while true {
                        seq += 1
                        let base = "c\(cycleNumber)w\(w)s\(seq)"
                        let line =
                            seq % 2 == 0
                            ? #"{"op":"set","path":"/\#(base)","value":\#(seq)}"#
                            : #"{"op":"update","path":"/","values":{"\#(base)a":\#(seq),"\#(base)b":\#(seq)}}"#
                        guard let response = try? c.request(line), response["ok"] == .bool(true),
                            let rev = response["rev"]?.int64Value
                        else { return }
                        if seq % 2 == 0 {
                            acknowledged.record(base, Int64(seq), rev: rev)
                        } else {
                            acknowledged.record(base + "a", Int64(seq), rev: rev)
                            acknowledged.record(base + "b", Int64(seq), rev: rev)
                        }
                    }
                }.start()
            }
            Thread.sleep(forTimeInterval: killAfter)
            server.kill9()
            group.wait()
        }
        XCTAssertGreaterThanOrEqual(cycle, 10)
        XCTAssertGreaterThan(acknowledged.count, 0)
        // A final clean start sees everything.
        let server = try HearthdProcess.start(binary: binary, dataDir: dataDir.path)
        let c = try TestClient(port: server.port)
        let state = try c.request(#"{"op":"get","path":"/"}"#)
        for (path, value) in acknowledged.all {
            XCTAssertEqual(state["value"]?[path], .int(value), "acknowledged write at /\(path) lost")
        }
        XCTAssertGreaterThan(presences.count, 0)
        Self.checkPresences(state["value"], presences, cycle: cycle + 1)
        try server.terminate()
    }

    /// No ghost: every acknowledged presence is `offline` after a restart, its onDisconnect ran
    /// once, and no onDisconnect (acknowledged or not) ever ran twice.
    static func checkPresences(_ root: JSONValue?, _ presences: AckLog, cycle: Int) {
        for (presence, _) in presences.all {
            XCTAssertEqual(
                root?["presence"]?[presence], .string("offline"), "a ghost at /presence/\(presence) (cycle \(cycle))")
            XCTAssertEqual(root?["runs"]?[presence], .int(1), "onDisconnect of \(presence) (cycle \(cycle))")
        }
        for member in root?["runs"]?.objectMembers ?? [] {
            XCTAssertEqual(member.value, .int(1), "onDisconnect of \(member.key) ran twice (cycle \(cycle))")
        }
    }
}

/// The acknowledged writes (path → value) and the highest acknowledged revision.
final class AckLog: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var writes: [String: Int64] = [:]
    private var highest: Int64 = 0

    func record(_ path: String, _ value: Int64, rev: Int64) {
        lock.lock()
        writes[path] = value
        highest = max(highest, rev)
        lock.unlock()
    }

    var all: [(String, Int64)] {
        lock.lock()
        defer { lock.unlock() }
        return writes.map { ($0.key, $0.value) }
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return writes.count
    }

    var maxRev: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return highest
    }
}

/// A `hearthd` child process on a free loopback port.
final class HearthdProcess {
    let process: Process
    let port: Int

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    /// The `hearthd` built beside the test bundle.
    static func binaryURL() throws -> URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("hearthd")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw XCTSkip("hearthd was not built beside the tests (run `swift build` first)")
    }

    /// Starts hearthd and waits until it accepts connections; the port is read from its log.
    /// `environment` adds to (or replaces) this process's variables.
    static func start(
        binary: URL, dataDir: String, extra: [String] = [], environment: [String: String] = [:]
    ) throws -> HearthdProcess {
        let process = Process()
        process.executableURL = binary
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        // The HTTP listener on a free port too (its default, 9080, may be another test's).
        let http = extra.contains("--http-port") ? [] : ["--http-port", "0"]
        process.arguments =
            ["--port", "0", "--data-dir", dataDir, "--fsync", "always", "--log-level", "info"] + http + extra
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        var text = ""
        while Date() < deadline {
            let chunk = stderr.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let range = text.range(of: #"on 127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                let digits = text[range].split(separator: ":").last.map(String.init) ?? ""
                if let port = Int(digits) {
                    // Keep draining the log so the child never blocks on a full pipe.
                    Thread { while !stderr.fileHandleForReading.availableData.isEmpty {} }.start()
                    return HearthdProcess(process: process, port: port)
                }
            }
        }
        process.terminate()
        throw TestClient.Failure(description: "hearthd did not start: \(text)")
    }

    var pid: Int32 { process.processIdentifier }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() throws {
        process.terminate()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
    }
}
