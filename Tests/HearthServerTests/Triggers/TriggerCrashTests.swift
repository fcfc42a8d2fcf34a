import Foundation
import HearthJSON
import XCTest

@testable import HearthServer

/// `kill -9` of hearthd while deliveries are in flight loses no event: after a restart every
/// acknowledged write's event reaches the receiver at least once.
final class TriggerCrashTests: XCTestCase {
    func testKill9InTheMiddleOfDeliveriesLosesNoEvent() async throws {
        let binary = try HearthdProcess.binaryURL()
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(delayMilliseconds: 20)
        let secretFile = try temporaryFile("whsec-crash-test-0123456789abcdef0123\n", suffix: ".secret")
        let config = try temporaryFile(
            #"""
            {"triggers":[{"name":"notify","path":"/messages/{id}","on":["create"],
              "url":"http://127.0.0.1:\#(receiver.port)/hook","secretFile":"\#(secretFile)","maxConcurrency":4}]}
            """#)
        let dataDir = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let count = 300

        let first = try HearthdProcess.start(binary: binary, dataDir: dataDir, extra: ["--config", config])
        let client = try TestClient(port: first.port)
        var lines = ""
        for index in 1...count {
            lines += #"{"op":"set","id":\#(index),"path":"/messages/m\#(index)","value":\#(index)}"# + "\n"
        }
        try client.send(String(lines.dropLast()))
        for _ in 1...count { XCTAssertEqual(try client.readResponse()["ok"], .bool(true)) }
        first.kill9()
        let deliveredBeforeKill = Set(try receiver.requests.map { try JSONParser.parse($0.body)["id"]?.stringValue })
        XCTAssertLessThan(deliveredBeforeKill.count, count, "the kill came in the middle of the deliveries")

        let second = try HearthdProcess.start(binary: binary, dataDir: dataDir, extra: ["--config", config])
        defer { try? second.terminate() }
        let expected = Set((1...count).map { "default:notify:\($0):/messages/m\($0)" })
        let deadline = Date().addingTimeInterval(30)
        var received: Set<String?> = []
        while Date() < deadline {
            received = Set(try receiver.requests.map { try JSONParser.parse($0.body)["id"]?.stringValue })
            if expected.allSatisfy({ received.contains($0) }) { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let missing = expected.filter { !received.contains($0) }
        XCTAssertTrue(missing.isEmpty, "\(missing.count) events never arrived, e.g. \(missing.prefix(3))")
    }
}
