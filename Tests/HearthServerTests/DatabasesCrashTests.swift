import Foundation
import HearthJSON
import XCTest

/// Eight databases written at once by the real `hearthd` (`fsync: always`), killed with
/// `kill -9` at random moments and started again on the same directory: every acknowledged
/// write is in its own database after recovery, and no database holds another's.
final class DatabasesCrashTests: XCTestCase {
    func testKillNineLosesNoAcknowledgedWriteInAnyDatabase() throws {
        let binary = try HearthdProcess.binaryURL()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hearth-dbcrash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let databases = (0..<8).map { "db-\($0)" }
        let acknowledged = databases.map { _ in AckLog() }
        var rng = SystemRandomNumberGenerator()
        let started = Date()
        var cycle = 0
        while cycle < 6 && Date().timeIntervalSince(started) < 45 {
            cycle += 1
            let server = try HearthdProcess.start(binary: binary, dataDir: dataDir.path)
            for (index, name) in databases.enumerated() {
                let checker = try TestClient(port: server.port)
                XCTAssertEqual(try checker.request(#"{"op":"use","id":1,"db":"\#(name)"}"#)["ok"], .bool(true))
                let state = try checker.request(#"{"op":"get","id":2,"path":"/"}"#)
                // The last acknowledged value, or the one written after it if that write reached
                // the log before the kill (unacknowledged writes may survive, never vanish once
                // acknowledged).
                for (path, value) in acknowledged[index].all {
                    let stored = state["value"]?["w"]?[path]?.int64Value
                    XCTAssertTrue(
                        stored == value || stored == value + 1,
                        "\(name): acknowledged /w/\(path) = \(value) lost, found \(String(describing: stored)) (cycle \(cycle))"
                    )
                }
                // Only this database's writer ever wrote here.
                if case .object(let members)? = state["value"] {
                    XCTAssertEqual(members.map(\.key), ["w"], "\(name) holds \(members.map(\.key))")
                }
                if case .object(let writes)? = state["value"]?["w"] {
                    for key in writes.map(\.key) {
                        XCTAssertTrue(key.hasPrefix("\(name)-"), "\(name) holds another database's write \(key)")
                    }
                }
                checker.close()
            }
            let port = server.port
            let group = DispatchGroup()
            let killAfter = Double.random(in: 0.1...0.5, using: &rng)
            let cycleNumber = cycle
            for (index, name) in databases.enumerated() {
                group.enter()
                Thread {
                    defer { group.leave() }
                    guard let client = try? TestClient(port: port),
                        (try? client.request(#"{"op":"use","id":1,"db":"\#(name)"}"#))?["ok"] == .bool(true)
                    else { return }
                    var sequence = 0
                    while true {
                        sequence += 1
                        let key = "\(name)-c\(cycleNumber)"
                        guard
                            let answer = try? client.request(
                                #"{"op":"set","id":2,"path":"/w/\#(key)","value":\#(sequence)}"#),
                            answer["ok"] == .bool(true)
                        else { return }
                        acknowledged[index].record(key, Int64(sequence), rev: 0)
                    }
                }.start()
            }
            Thread.sleep(forTimeInterval: killAfter)
            server.kill9()
            group.wait()
        }
        XCTAssertGreaterThan(acknowledged.reduce(0) { $0 + $1.count }, databases.count)
    }
}
