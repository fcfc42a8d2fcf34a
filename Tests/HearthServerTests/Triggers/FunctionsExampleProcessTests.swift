import Foundation
import HearthJSON
import HearthTestSupport
import XCTest

/// The runnable receiver of docs/functions.md as a user runs it: hearthd delivers created
/// messages to `hearth-functions-example`, which verifies them and writes a count back through
/// HearthClient with an admin secret.
final class FunctionsExampleProcessTests: XCTestCase {
    func testTheExampleCountsCreatedMessagesThroughHearthClient() async throws {
        let hearthd = try HearthdProcess.binaryURL()
        let example = try builtExecutable("hearth-functions-example")
        let signing = "whsec-example-test-0123456789abcdef0123"
        let admin = "example-test-admin-secret-0123456789"
        let functionsPort = try EtcdProcess.freeLoopbackPort()
        let secretFile = try temporaryFile(signing + "\n", suffix: ".secret")
        let config = try temporaryFile(
            #"""
            {"triggers":[{"name":"count","path":"/messages/{id}","on":["create"],
              "url":"http://127.0.0.1:\#(functionsPort)/hook","secretFile":"\#(secretFile)"}]}
            """#)
        let dataDir = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let server = try HearthdProcess.start(
            binary: hearthd, dataDir: dataDir, extra: ["--config", config], environment: ["HEARTH_ADMIN_SECRET": admin])
        defer { try? server.terminate() }

        let receiver = Process()
        receiver.executableURL = example
        receiver.environment = ProcessInfo.processInfo.environment.merging([
            "HEARTH_ADMIN_SECRET": admin, "HEARTH_FUNCTIONS_SECRET": signing,
            "HEARTH_URL": "hearth://127.0.0.1:\(server.port)", "FUNCTIONS_PORT": "\(functionsPort)",
        ]) { $1 }
        receiver.standardOutput = FileHandle.nullDevice
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        defer {
            receiver.terminate()
            receiver.waitUntilExit()
        }

        let client = try TestClient(port: server.port)
        for id in ["m1", "m2", "m3"] {
            XCTAssertEqual(
                try client.request(#"{"op":"set","path":"/messages/\#(id)","value":{"text":"hi"}}"#)["ok"], .bool(true))
        }
        // The example starts listening in its own time; hearthd retries until it does.
        let deadline = Date().addingTimeInterval(30)
        var stats: JSONValue = .null
        while Date() < deadline {
            stats = try client.request(#"{"op":"get","path":"/stats"}"#)["value"] ?? .null
            if stats["messageCount"] == .int(3) { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertEqual(stats["messageCount"], .int(3), "\(stats)")
        XCTAssertNotNil(stats["lastMessage"]?.stringValue, "\(stats)")
    }
}
