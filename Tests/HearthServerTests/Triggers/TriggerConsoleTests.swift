import Foundation
import HearthJSON
import XCTest

@testable import HearthServer

/// The web console's Triggers panel (docs/console.md, "Triggers") in a real headless Chromium
/// (`scripts/console/console_triggers.py`), against a real server on the real clock: the
/// deliveries' retries and maximum age are timed, which the console's main browser test (on a
/// test clock) cannot show.
final class TriggerConsoleTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testTheTriggersPanelInHeadlessChromium() async throws {
        for program in ["/usr/bin/chromium", "/usr/bin/chromedriver"]
        where !FileManager.default.isExecutableFile(atPath: program) {
            XCTFail("\(program) is missing: apt-get install chromium chromium-driver")
            return
        }
        let (envStatus, envOutput) = FirebaseAdminTests.run(
            Self.root.appendingPathComponent("scripts/python-env.sh").path, [], timeout: 600)
        let python = envOutput.split(separator: "\n").last.map(String.init) ?? ""
        guard envStatus == 0, FileManager.default.isExecutableFile(atPath: python) else {
            return XCTFail("scripts/python-env.sh failed (\(envStatus)): \(envOutput)")
        }
        let adminSecret = "console-triggers-admin-secret-0123456789"
        let rules = try temporaryFile(#"{"rules":{".read":"auth != null",".write":"auth != null"}}"#)
        let configured = try TriggerSettings.parseList(
            try JSONParser.parse(
                Array(
                    #"[{"name":"audit","path":"/orders/{id}","url":"http://127.0.0.1:9/audit","secretEnv":"AUDIT"}]"#
                        .utf8)),
            source: "test", baseDirectory: nil, environment: { _ in String(repeating: "a", count: 32) })
        let configure: (inout ServerConfiguration) -> Void = {
            $0.rulesFile = rules
            $0.tokens.adminSecrets = [adminSecret]
            $0.triggers = configured
        }
        try await withLiveServer(configure: configure) { server in
            let (status, output) = FirebaseAdminTests.run(
                python,
                [
                    Self.root.appendingPathComponent("scripts/console/console_triggers.py").path,
                    "\(server.httpPort ?? 0)", "\(server.port)", adminSecret,
                    Self.root.appendingPathComponent("docs/console").path,
                ], timeout: 120)
            XCTAssertEqual(status, 0, output)
            XCTAssertTrue(output.hasSuffix("ok\n"), output)
        }
    }
}
