import Foundation
import HearthJSON
import HearthServer
import XCTest

/// The web console (docs/console.md): served by hearthd on its HTTP listener, and driven in a
/// real headless Chromium (Selenium, `scripts/console/console_check.py`) against a real server;
/// plus the HTTP endpoints it relies on (`simulate`, rules errors with their line).
///
/// The browser test needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them) and
/// the `.venv` that `scripts/python-env.sh` makes (selenium from PyPI).
final class ConsoleTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private static let python: Result<String, TestClient.Failure> = {
        let (status, output) = FirebaseAdminTests.run(
            root.appendingPathComponent("scripts/python-env.sh").path, [], timeout: 600)
        let path = output.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, FileManager.default.isExecutableFile(atPath: path) else {
            return .failure(TestClient.Failure(description: "scripts/python-env.sh failed (\(status)): \(output)"))
        }
        return .success(path)
    }()

    private let rules = #"""
        {
          "rules": {
            ".read": "auth != null",
            ".write": "auth != null",
            "dinosaurs": {".indexOn": "height"}
          }
        }
        """#

    // MARK: Serving

    func testTheConsoleIsServedAtTheRoot() async throws {
        try await withLiveServer { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let page = try client.request("GET", "/")
            XCTAssertEqual(page.status, 200)
            XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
            XCTAssertEqual(page.header("Cache-Control"), "no-cache")
            XCTAssertTrue(page.text.contains(#"<script src="/console/console.js""#), page.text)
            let script = try client.request("GET", "/console/console.js")
            XCTAssertEqual(script.status, 200)
            XCTAssertEqual(script.header("Content-Type"), "text/javascript; charset=utf-8")
            XCTAssertTrue(script.text.contains("EventSource"))
            let style = try client.request("GET", "/console/console.css")
            XCTAssertEqual(style.header("Content-Type"), "text/css; charset=utf-8")
            XCTAssertEqual(try client.request("HEAD", "/").body, [])
            XCTAssertEqual(try client.request("GET", "/console/nope.js").status, 404)
            XCTAssertEqual(try client.request("PUT", "/", body: "1").status, 405)
            // Data locations are untouched: /.json is the root, /console/… .json a location.
            XCTAssertEqual(try client.request("PUT", "/console/app.json", body: "1").status, 200)
            XCTAssertEqual(try client.request("GET", "/.json").json, json(#"{"console":{"app":1}}"#))
        }
    }

    // MARK: simulate and rules errors over HTTP

    func testSimulateOverHTTP() async throws {
        let rulesFile = try temporaryFile(rules)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let admin = TestSecrets.admin
            let read = #"{"as":null,"request":{"op":"get","path":"/dinosaurs"}}"#
            let denied = try client.request("POST", "/.settings/simulate.json?auth=\(admin)", body: read)
            XCTAssertEqual(denied.status, 200)
            XCTAssertEqual(denied.json["allowed"], .bool(false))
            XCTAssertEqual(denied.json["rule"], .null)
            XCTAssertNotNil(denied.json["explanation"])

            let write = #"{"as":{"uid":"alice","token":{"admin":true}},"request":{"op":"set","path":"/x","value":1}}"#
            let allowed = try client.request("POST", "/.settings/simulate.json?auth=\(admin)", body: write)
            XCTAssertEqual(allowed.json["allowed"], .bool(true))
            XCTAssertEqual(allowed.json["rule"]?["expression"], .string("auth != null"))
            // Nothing was performed.
            XCTAssertEqual(try client.request("GET", "/x.json?auth=\(admin)").json, .null)

            // Admins only; bad bodies and methods are refused.
            let alice = try await testToken(uid: "alice", now: Int64(Date().timeIntervalSince1970 * 1000))
            XCTAssertEqual(try client.request("POST", "/.settings/simulate.json?auth=\(alice)", body: read).status, 401)
            XCTAssertEqual(try client.request("POST", "/.settings/simulate.json", body: read).status, 401)
            let notARequest = try client.request(
                "POST", "/.settings/simulate.json?auth=\(admin)", body: #"{"request":{"op":"ping"}}"#)
            XCTAssertEqual(notARequest.status, 400)
            XCTAssertEqual(
                try client.request("POST", "/.settings/simulate.json?auth=\(admin)", body: "[]").status, 400)
            XCTAssertEqual(try client.request("GET", "/.settings/simulate.json?auth=\(admin)").status, 405)
        }
    }

    /// The icon answers where browsers look for it unasked (no 404 in the browser's console),
    /// and health names the line protocol's port, which the console's Swift snippet shows.
    func testTheFaviconAndTheLinePortTheSnippetsUse() async throws {
        try await withLiveServer { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            for path in ["/favicon.ico", "/console/favicon.svg"] {
                let icon = try client.request("GET", path)
                XCTAssertEqual(icon.status, 200, path)
                XCTAssertEqual(icon.header("Content-Type"), "image/svg+xml", path)
                XCTAssertTrue(icon.text.hasPrefix("<svg"), path)
            }
            XCTAssertTrue(
                try client.request("GET", "/").text.contains(#"<link rel="icon" href="/console/favicon.svg""#))
            let health = try client.request("GET", "/.well-known/hearth/health")
            XCTAssertEqual(health.json["linePort"], .int(Int64(server.port)), health.text)
            let script = try client.request("GET", "/console/console.js").text
            XCTAssertFalse(script.contains(":9000\")"), "the Swift snippet hard-codes a port")
        }
    }

    func testSimulateInOpenModeAllowsEverything() async throws {
        try await withLiveServer { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let answer = try client.request(
                "POST", "/.settings/simulate.json", body: #"{"request":{"op":"remove","path":"/a"}}"#)
            XCTAssertEqual(answer.status, 200, answer.text)
            XCTAssertEqual(answer.json["allowed"], .bool(true))
        }
    }

    func testARulesErrorNamesItsLineAndTheOldRulesStay() async throws {
        let rulesFile = try temporaryFile(rules)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let admin = TestSecrets.admin
            let before = try client.request("GET", "/.settings/rules.json?auth=\(admin)").json
            let bad = "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": \"auth.uid ===\"\n  }\n}"
            let refused = try client.request("PUT", "/.settings/rules.json?auth=\(admin)", body: bad)
            XCTAssertEqual(refused.status, 400)
            XCTAssertTrue(refused.error?.contains("(line 4, column") == true, refused.text)
            XCTAssertEqual(try client.request("GET", "/.settings/rules.json?auth=\(admin)").json, before)
        }
    }

    // MARK: In a browser

    /// A root larger than the console follows live (`LIVE_BYTES`, 4 MiB), on a server that lets
    /// 1 MiB of output wait: the console opens no stream on it and says why, follows a small
    /// location, and retries a stream the server keeps closing only a few times, later and later.
    func testTheConsoleDoesNotStreamALargeRoot() async throws {
        for program in ["/usr/bin/chromium", "/usr/bin/chromedriver"]
        where !FileManager.default.isExecutableFile(atPath: program) {
            XCTFail("\(program) is missing: apt-get install chromium chromium-driver")
            return
        }
        let python = try Self.python.get()
        try await withLiveServer(setting: \.maxOutboundBytes, to: 1 << 20) { server in
            let tcp = try TestClient(port: server.port)
            let filler = String(repeating: "x", count: 1000)
            let children = (0..<5000).map { #""c\#($0)":"\#(filler)""# }.joined(separator: ",")
            let seeded = try tcp.request(#"{"id":1,"op":"set","path":"/big","value":{"# + children + "}}")
            XCTAssertEqual(seeded["ok"], .bool(true), "\(seeded)")
            try tcp.request(#"{"id":2,"op":"set","path":"/small","value":{"a":1}}"#)
            tcp.close()
            let (status, output) = FirebaseAdminTests.run(
                python,
                [
                    Self.root.appendingPathComponent("scripts/console/console_large.py").path,
                    "\(server.httpPort ?? 0)",
                ], timeout: 60)
            XCTAssertEqual(status, 0, output)
            XCTAssertTrue(output.hasSuffix("ok\n"), output)
            print(output)
        }
    }

    func testTheConsoleInHeadlessChromium() async throws {
        for program in ["/usr/bin/chromium", "/usr/bin/chromedriver"]
        where !FileManager.default.isExecutableFile(atPath: program) {
            XCTFail(
                "\(program) is missing: the console's browser test needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run installs them)"
            )
            return
        }
        let python = try Self.python.get()
        let rulesFile = try temporaryFile(rules)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let tcp = try TestClient(port: server.port)
            try tcp.authAdmin()
            try tcp.request(#"{"id":1,"op":"set","path":"/greeting","value":"hello"}"#)
            try tcp.request(
                #"{"id":2,"op":"set","path":"/dinosaurs","value":{"stegosaurus":{"height":4,"length":9},"trex":{"height":6,"length":12},"bruhathkayosaurus":{"height":25,"length":40}}}"#
            )
            var big = #"{"id":3,"op":"set","path":"/big","value":{"#
            for index in 0..<100_000 {
                if index > 0 { big += "," }
                let digits = String(index)
                big += "\"item" + String(repeating: "0", count: 6 - digits.count) + digits + "\":\(index)"
            }
            big += "}}"
            let seeded = try tcp.request(big)
            XCTAssertEqual(seeded["ok"], .bool(true), "\(seeded)")
            tcp.close()

            let screenshots = Self.root.appendingPathComponent("docs/console").path
            let (status, output) = FirebaseAdminTests.run(
                python,
                [
                    Self.root.appendingPathComponent("scripts/console/console_check.py").path,
                    "\(server.httpPort ?? 0)", "\(server.port)", TestSecrets.admin, screenshots,
                ], timeout: 300)
            XCTAssertEqual(status, 0, output)
            XCTAssertTrue(output.hasSuffix("ok\n"), output)
            print(output)
        }
    }
}
