import Foundation
import HearthCore
import HearthJSON
import HearthServer
import XCTest

/// The files shipped with the server agree with the code and with each other (issue #16,
/// items 10–12): the getting-started guide with config/rules.json, config/hearth.json with the
/// server, the Dockerfile with its own configuration.
final class ShippedFilesTests: XCTestCase {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The shell commands of the guide (lines starting with `hearth` or `$ hearth`).
    func guideCommands() throws -> [[String]] {
        try text("docs/getting-started.md").split(separator: "\n").compactMap { line in
            var line = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("$ ") { line.removeFirst(2) }
            guard line.hasPrefix("hearth ") else { return nil }
            return line.split(separator: " ").map(String.init)
        }
    }

    func testEveryOrderingTheGuideQueriesIsDeclaredInTheExampleRules() throws {
        let rules = try RuleSet(source: text("config/rules.json")).indexRules
        var checked = 0
        for words in try guideCommands() where words.count > 2 && ["get", "listen"].contains(words[1]) {
            let path = try Path.parse(words[2])
            var order: QueryOrder?
            if let i = words.firstIndex(of: "--order-by-child"), i + 1 < words.count {
                order = .child(try Path.parse(words[i + 1]))
            } else if words.contains("--order-by-value") {
                order = .value
            }
            guard let order else { continue }
            checked += 1
            XCTAssertTrue(rules.isDeclared(order, at: path), "config/rules.json declares no index for: \(words)")
        }
        XCTAssertGreaterThan(checked, 5)
    }

    func testTheGuideShowsOnlyWhatItsCommandsWrote() throws {
        let guide = try text("docs/getting-started.md")
        let writes = try guideCommands().filter { ["set", "update"].contains($0.dropFirst().first) }
            .map { $0.joined(separator: " ") }.joined(separator: "\n")
        // Every nickname shown in an output was given by one of the guide's commands.
        var shown = 0
        for part in guide.components(separatedBy: #""nickname":""#).dropFirst() {
            let nickname = String(part.prefix { $0 != "\"" })
            shown += 1
            XCTAssertTrue(writes.contains(nickname), "the guide shows the nickname \(nickname) that no command wrote")
        }
        XCTAssertGreaterThan(shown, 0)
    }

    func testConfigFileLoadsAndSaysNothingStale() throws {
        var configuration = ServerConfiguration()
        try configuration.apply(fileAt: root.appendingPathComponent("config/hearth.json").path)
        let file = try text("config/hearth.json")
        for stale in ["not written yet", "is coming"] {
            XCTAssertFalse(file.contains(stale), "config/hearth.json says \"\(stale)\"")
        }
    }

    func testTheDockerRulesRequireSignInAndTheExampleRulesAreOpen() throws {
        let locked = try RuleSet(source: text("config/docker/rules.json"))
        let user = AuthContext(uid: "u", provider: "custom", claims: .object([]), expiresAt: nil)
        XCTAssertFalse(locked.checkRead(path: .root, query: nil, auth: nil, root: .empty, now: 0).allowed)
        XCTAssertTrue(locked.checkRead(path: .root, query: nil, auth: user, root: .empty, now: 0).allowed)
        let open = try RuleSet(source: text("config/rules.json"))
        XCTAssertTrue(open.checkRead(path: .root, query: nil, auth: nil, root: .empty, now: 0).allowed)
    }

    func testDockerImageUsesItsConfigurationAndChecksItsOwnPort() throws {
        let dockerfile = try text("Dockerfile")
        XCTAssertTrue(dockerfile.contains("COPY config/hearth.json /etc/hearth/"))
        XCTAssertTrue(dockerfile.contains("COPY config/docker/rules.json /etc/hearth/rules.json"))
        let lines = dockerfile.split(separator: "\n").map(String.init)
        let usesConfig =
            lines.contains { $0.hasPrefix("ENV HEARTH_CONFIG=/etc/hearth/hearth.json") }
            || lines.contains { $0.hasPrefix("CMD") && $0.contains("/etc/hearth/hearth.json") }
        XCTAssertTrue(usesConfig, "the image copies its configuration but does not use it")
        // The health check is hearthd's own, which reads the same configuration (ports, TLS):
        // a plain-text check would fail on a container started with TLS (issue #49).
        let health = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("HEALTHCHECK") })
        XCTAssertTrue(
            lines[health...].prefix(2).joined().contains(#"CMD ["/usr/local/bin/hearthd", "--health-check"]"#))
        XCTAssertFalse(dockerfile.contains("/dev/tcp/"), "a health check that speaks plain text")
        XCTAssertFalse(dockerfile.contains("chown -R hearth:hearth /etc/hearth"), "the rules are not written there")
        // The README's TLS example keeps the image's health check and mounts the rules read-only:
        // both work (the check follows TLS; accepted rules go to the data volume).
        let readme = try text("README.md")
        XCTAssertTrue(readme.contains("HEARTH_TLS_CERTIFICATE"), "the README's docker run with TLS")
        XCTAssertFalse(readme.contains("--health-cmd"), "the README still tells to replace the health check")
    }
}
