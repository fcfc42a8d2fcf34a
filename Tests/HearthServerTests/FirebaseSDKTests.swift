import Foundation
import HearthServer
import XCTest

/// The real, unmodified Firebase JS SDK (the npm package `firebase` 11.8.0) against a live server
/// over the Firebase wire protocol: the scenarios of `scripts/firebase-sdk/scenarios.js` through
/// its compat bundles in Node and through its modular npm build in Node, each scenario judging
/// the events the SDK raised (docs/firebase-sdk.md).
///
/// The SDK is third-party code kept out of the repository: these tests run when it is in
/// `.firebase-sdk/` (or `$HEARTH_FIREBASE_SDK`) and skip, saying so, when it is not. They need
/// Node 20 or later on the PATH. The browser scenarios run from `scripts/firebase-sdk.sh`.
final class FirebaseSDKTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func sdkFolder() throws -> String {
        let folder =
            ProcessInfo.processInfo.environment["HEARTH_FIREBASE_SDK"]
            ?? Self.root.appendingPathComponent(".firebase-sdk").path
        let bundles = [
            folder + "/firebase-database-compat.js", folder + "/node_modules/firebase/firebase-database-compat.js",
        ]
        guard bundles.contains(where: { FileManager.default.fileExists(atPath: $0) }),
            FileManager.default.fileExists(atPath: folder + "/node_modules/@firebase/database/package.json")
        else {
            throw XCTSkip("the Firebase JS SDK is not in .firebase-sdk: see docs/firebase-sdk.md")
        }
        return folder
    }

    private func node() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/node"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw XCTSkip("node is not on the PATH: the Firebase SDK tests need Node 20 or later (docs/firebase-sdk.md)")
    }

    /// Runs one Node driver against a server with the scenarios' rules and "demo" as its default
    /// database; the driver's own hearthd (for the kill-and-restart scenario) is the one built
    /// beside the tests, when there is one.
    private func runDriver(_ script: String, nodeArguments: [String] = []) async throws {
        _ = try sdkFolder()
        let node = try node()
        let rules = Self.root.appendingPathComponent("scripts/firebase-sdk/rules.json").path
        let hearthd = try? HearthdProcess.binaryURL().path
        let configure: (inout ServerConfiguration) -> Void = {
            $0.rulesFile = rules
            $0.databases.defaultName = "demo"
            $0.tokens.adminSecrets = [TestSecrets.admin]
        }
        try await withLiveServer(configure: configure) { server in
            var arguments =
                nodeArguments + [
                    Self.root.appendingPathComponent("scripts/firebase-sdk/\(script)").path,
                    "--port", "\(server.httpPort ?? 0)", "--ns", "demo", "--rules", "--admin-secret", TestSecrets.admin,
                    "--tcp-port", "\(server.port)",
                ]
            if let hearthd { arguments += ["--hearthd", hearthd] }
            let (status, output) = FirebaseAdminTests.run(node, arguments, timeout: 600)
            print(output)
            let verdicts = output.split(separator: "\n").filter { $0.contains(#""verdict":"#) }
            for verdict in verdicts where verdict.contains(#""verdict":"FAIL""#) {
                XCTFail(String(verdict))
            }
            XCTAssertFalse(verdicts.isEmpty, output)
            XCTAssertEqual(status, 0, "the driver failed; its output is above")
        }
    }

    func testTheCompatBundlesInNode() async throws {
        try await runDriver("compat-node.js", nodeArguments: ["--experimental-websocket"])
    }

    func testTheModularBuildInNode() async throws {
        try await runDriver("modular-node.js")
    }
}
