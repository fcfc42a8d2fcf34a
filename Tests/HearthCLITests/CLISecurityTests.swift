import Foundation
import HearthJSON
import HearthTestSupport
import XCTest

/// `hearth token`, `--token` / `HEARTH_TOKEN`, `hearth rules …` and `hearths://` with
/// `--ca-file`, against a real server enforcing rules.
final class CLISecurityTests: XCTestCase {
    static let rules = #"""
        {"rules": {
            "public": {".read": true, ".write": true},
            "users": {"$uid": {".read": "auth != null && auth.uid == $uid", ".write": "auth != null && auth.uid == $uid"}}
        }}
        """#

    var admin: [String: String] { ["HEARTH_TOKEN": CLITestSecrets.admin] }

    func testMintedTokenAuthenticates() async throws {
        try await withCLISecureServer(rules: Self.rules) { server in
            let minted = try server.hearth(
                ["token", "--uid", "alice", "--claims", #"{"role":"editor"}"#, "--ttl", "10m"],
                environment: ["HEARTH_JWT_SECRET": CLITestSecrets.jwt])
            XCTAssertEqual(minted.status, 0, minted.stderr)
            let token = minted.stdout.trimmingCharacters(in: .newlines)
            XCTAssertEqual(token.split(separator: ".").count, 3, minted.stdout)
            XCTAssertFalse(token.contains("\n"))

            let denied = try server.hearth(["get", "/users/alice"])
            XCTAssertEqual(denied.status, 1)
            XCTAssertTrue(denied.stderr.contains("permission_denied"), denied.stderr)
            XCTAssertEqual(denied.stdout, "")

            var result = try server.hearth(["set", "/users/alice/name", #""Alice""#, "--token", token])
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try server.hearth(["get", "/users/alice/name"], environment: ["HEARTH_TOKEN": token])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json(), .string("Alice"))
            // Before the subcommand too.
            result = try server.hearth(["--token", token, "get", "/users/alice/name"])
            XCTAssertEqual(try result.json(), .string("Alice"))
            XCTAssertFalse(result.stderr.contains(token))

            // Someone else's data stays denied, with the server's message and status 1.
            result = try server.hearth(["set", "/users/bob/name", #""x""#, "--token", token])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("denied at /users/bob/name"), result.stderr)

            // A bad token fails the command with the reason, never echoing the token.
            result = try server.hearth(["get", "/public", "--token", "garbage-token"])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("invalid_token"), result.stderr)
            XCTAssertFalse(result.stderr.contains("garbage-token"), result.stderr)
        }
    }

    func testTokenTakesTheSecretFromTheConfigurationFile() async throws {
        try await withCLISecureServer(rules: Self.rules) { server in
            let config = try server.file(
                "hearth.json", #"{"// comment": "test", "jwtSecret": "\#(CLITestSecrets.jwt)", "port": 9000}"#)
            let minted = try server.hearth(["token", "--uid", "alice", "--config", config])
            XCTAssertEqual(minted.status, 0, minted.stderr)
            let token = minted.stdout.trimmingCharacters(in: .newlines)
            XCTAssertEqual(try server.hearth(["set", "/users/alice/x", "1", "--token", token]).status, 0)

            let noSecret = try server.hearth(["token", "--uid", "alice"])
            XCTAssertEqual(noSecret.status, 2)
            XCTAssertTrue(noSecret.stderr.contains("HEARTH_JWT_SECRET"), noSecret.stderr)
            XCTAssertEqual(noSecret.stdout, "")
            XCTAssertEqual(
                try server.hearth(["token", "--uid", "alice", "--ttl", "soon", "--config", config]).status, 2)
            XCTAssertEqual(
                try server.hearth(["token", "--uid", "alice", "--claims", "[1]", "--config", config]).status, 2)
        }
    }

    func testRulesCheck() async throws {
        try await withCLISecureServer(rules: Self.rules) { server in
            let good = try server.file("good.json", "// my rules\n" + Self.rules)
            var result = try server.hearth(["rules", "check", good])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["ok"], .bool(true))

            let bad = try server.file("bad.json", "{\"rules\": {\n  \"a\": {\".read\": \"auth.uid ==\"}\n}}")
            result = try server.hearth(["rules", "check", bad])
            XCTAssertEqual(result.status, 1)
            let json = try result.json()
            XCTAssertEqual(json["ok"], .bool(false))
            XCTAssertEqual(json["error"]?["line"], .int(2))
            XCTAssertNotNil(json["error"]?["column"]?.int64Value)
            XCTAssertEqual(json["error"]?["rulePath"], .string("/rules/a/.read"))
            XCTAssertTrue(result.stderr.contains("line 2"), result.stderr)

            result = try server.hearth(["rules", "check", "/nonexistent/rules.json"])
            XCTAssertEqual(result.status, 1)
        }
    }

    func testRulesSetAndGet() async throws {
        try await withCLISecureServer(rules: Self.rules) { server in
            var result = try server.hearth(["rules", "get"], environment: admin)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json(), try JSONParser.parse(Self.rules))

            let newRules = #"{"rules": {".read": true, "locked": {".write": false}}}"#
            let file = try server.file("new.json", "// replaced by the test\n" + newRules)
            result = try server.hearth(["rules", "set", file], environment: admin)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try server.hearth(["rules", "get"], environment: admin)
            XCTAssertEqual(try result.json(), try JSONParser.parse(newRules))
            // Now anyone may read.
            XCTAssertEqual(try server.hearth(["get", "/users/alice"]).status, 0)

            let bad = try server.file("bad.json", #"{"rules": {".read": "nonsense +"}}"#)
            result = try server.hearth(["rules", "set", bad], environment: admin)
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("invalid rules"), result.stderr)
            XCTAssertTrue(result.stderr.contains("line 1"), result.stderr)
            XCTAssertEqual(
                try server.hearth(["rules", "get"], environment: admin).json(), try JSONParser.parse(newRules))

            // Not an admin: permission_denied, status 1.
            result = try server.hearth(["rules", "get"])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("permission_denied"), result.stderr)
        }
    }

    func testRulesSimulate() async throws {
        try await withCLISecureServer(rules: Self.rules) { server in
            var result = try server.hearth(
                ["rules", "simulate", "--as", #"{"uid":"alice"}"#, "set", "/users/alice/name", #""A""#],
                environment: admin)
            XCTAssertEqual(result.status, 0, result.stderr)
            var verdict = try result.json()
            XCTAssertEqual(verdict["allowed"], .bool(true))
            XCTAssertEqual(verdict["rule"]?["path"], .string("/users/$uid/.write"))
            XCTAssertNotNil(verdict["explanation"]?.stringValue)

            result = try server.hearth(["rules", "simulate", "--anonymous", "get", "/users/alice"], environment: admin)
            XCTAssertEqual(result.status, 1)
            verdict = try result.json()
            XCTAssertEqual(verdict["allowed"], .bool(false))

            result = try server.hearth(
                ["rules", "simulate", "--as", "admin", "--request", #"{"op":"remove","path":"/users/bob"}"#],
                environment: admin)
            XCTAssertEqual(result.status, 0, result.stderr)

            // Usage errors: no identity; a value missing.
            XCTAssertEqual(try server.hearth(["rules", "simulate", "get", "/x"], environment: admin).status, 2)
            XCTAssertEqual(
                try server.hearth(["rules", "simulate", "--anonymous", "set", "/x"], environment: admin).status, 2)
            // Not an admin.
            result = try server.hearth(["rules", "simulate", "--anonymous", "get", "/x"])
            XCTAssertEqual(result.status, 1)
            XCTAssertEqual(result.stdout, "")
        }
    }

    func testCAFileWithHearthsURL() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        try await withCLISecureServer(rules: #"{"rules":{".read":true,".write":true}}"#, pki: pki) { server in
            XCTAssertTrue(server.url.hasPrefix("hearths://"))
            var result = try server.hearth(["set", "/tls", "1", "--ca-file", pki.path("ca.crt")])
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try server.hearth(["get", "/tls", "--ca-file", pki.path("ca.crt")])
            XCTAssertEqual(try result.json(), .int(1))
            XCTAssertEqual(result.stderr, "")

            // The system roots do not trust the test CA.
            result = try server.hearth(["get", "/tls"])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("TLS handshake failed"), result.stderr)

            result = try server.hearth(["get", "/tls", "--insecure-skip-verify"])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json(), .int(1))
            XCTAssertTrue(result.stderr.contains("WARNING"), result.stderr)
            XCTAssertTrue(result.stderr.contains("NOT verified"), result.stderr)
        }
    }

    /// `hearth://` against a TLS port and against the HTTP port fails within about a second (not
    /// after --timeout) and says which scheme or port to use.
    func testTheWrongSchemeOrPortFailsAtOnceNamingTheFix() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        try await withCLISecureServer(rules: #"{"rules":{".read":true,".write":true}}"#, pki: pki) { server in
            let httpPort = try XCTUnwrap(server.server.httpPort)
            let cases = [
                (server.server.port, "hearths://127.0.0.1:\(server.server.port)"),
                (httpPort, "hearths://127.0.0.1:\(httpPort)"),
            ]
            for (port, fix) in cases {
                let started = Date()
                let result = try CLIProcess(["ping", "--timeout", "8"], url: "hearth://127.0.0.1:\(port)").finish()
                XCTAssertEqual(result.status, 1, result.stderr)
                XCTAssertTrue(result.stderr.contains(fix), result.stderr)
                XCTAssertLessThan(Date().timeIntervalSince(started), 3, result.stderr)
            }
        }
        try await withCLIServer { server in
            let httpPort = try XCTUnwrap(server.server.httpPort)
            let started = Date()
            let result = try CLIProcess(
                ["--url", "hearth://127.0.0.1:\(httpPort)", "ping", "--timeout", "8"], url: nil
            )
            .finish()
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("an HTTP server answered"), result.stderr)
            XCTAssertTrue(result.stderr.contains("hearthd's port"), result.stderr)
            XCTAssertLessThan(Date().timeIntervalSince(started), 3, result.stderr)
        }
    }
}
