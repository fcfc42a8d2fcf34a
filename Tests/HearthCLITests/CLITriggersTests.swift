import Foundation
import HearthJSON
import XCTest

/// `hearth triggers list|status|add|remove|dead-letters|replay` against a server with rules:
/// the admin's commands, the secret read locally and never printed, and refusals.
final class CLITriggersTests: XCTestCase {
    private let hookSecret = String(repeating: "5ec4e7", count: 8)
    private let rules = #"{"rules": {".read": "auth != null", ".write": "auth != null"}}"#

    func testAnAdminAddsListsReplaysAndRemovesTriggers() async throws {
        try await withCLISecureServer(rules: rules) { server in
            let admin = ["HEARTH_TOKEN": CLITestSecrets.admin]
            let secretFile = try server.file("hook.secret", hookSecret + "\n")
            var outputs: [String] = []
            func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIResult {
                let result = try server.hearth(arguments, environment: admin.merging(environment) { $1 })
                outputs.append(result.stdout + result.stderr)
                return result
            }

            var result = try run(["triggers", "list"])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, "no triggers\n")

            result = try run([
                "triggers", "add", "notify", "--path", "/messages/{id}", "--on", "create,update", "--target",
                "http://127.0.0.1:9/hook", "--secret-file", secretFile, "--header", "X-App: chat", "--timeout-ms",
                "2000", "--max-concurrency", "2", "--max-age-seconds", "60",
            ])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(
                result.stdout, "added trigger notify: create,update at /messages/{id} → http://127.0.0.1:9/hook\n")
            result = try run(
                [
                    "triggers", "add", "audit", "--path", "/orders/{order}", "--target", "http://127.0.0.1:9/audit",
                    "--secret-env", "AUDIT_HOOK_SECRET", "--json",
                ], environment: ["AUDIT_HOOK_SECRET": hookSecret])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["on"], .array([.string("create"), .string("update"), .string("delete")]))
            result = try server.hearth(
                [
                    "triggers", "add", "piped", "--path", "/p/{id}", "--target", "http://127.0.0.1:9/piped",
                    "--secret-file", "-",
                ], environment: admin, stdin: hookSecret + "\n")
            outputs.append(result.stdout + result.stderr)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try run(["triggers", "remove", "piped"]).status, 0)
            result = try run([
                "triggers", "add", "notify", "--path", "/x", "--target", "http://127.0.0.1:9/", "--secret-file",
                secretFile,
            ])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("bad_request"), result.stderr)

            result = try run(["triggers", "list"])
            let lines = result.stdout.split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.count, 3, result.stdout)
            XCTAssertTrue(lines.first?.hasPrefix("NAME") ?? false, result.stdout)
            XCTAssertTrue(
                lines.count == 3 && lines[1].hasPrefix("audit ") && lines[2].hasPrefix("notify "), result.stdout)
            XCTAssertTrue(result.stdout.contains("create,update"), result.stdout)

            result = try run(["triggers", "status"])
            XCTAssertEqual(result.status, 0, result.stderr)
            let table = result.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            XCTAssertEqual(
                table.first,
                [
                    "NAME", "STATE", "DELIVERED-REV", "LAG(revs)", "LAG(s)", "DELIVERED", "FAILED", "RETRIED", "DEAD",
                    "LOST", "LAST-ERROR",
                ], result.stdout)
            XCTAssertEqual(table.map { $0.first }, ["NAME", "audit", "notify"], result.stdout)
            result = try run(["triggers", "status", "notify", "--json"])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["name"], .string("notify"))
            XCTAssertEqual(try result.json()["source"], .string("api"))
            result = try run(["triggers", "status", "nosuch"])
            XCTAssertEqual(result.status, 1)

            result = try run(["triggers", "dead-letters", "notify"])
            XCTAssertEqual(result.stdout, "no dead letters\n", result.stderr)
            result = try run(["triggers", "dead-letters", "notify", "--json", "--limit", "5"])
            XCTAssertEqual(try result.json(), .object(["deadLetters": .array([])]))
            result = try run(["triggers", "replay", "notify"])
            XCTAssertEqual(result.stdout, "queued 0 dead letters of notify for delivery\n", result.stderr)
            result = try run(["triggers", "replay", "notify", "--id", "a", "--id", "b"])
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try run(["triggers", "replay", "nosuch"])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("not_found"), result.stderr)

            // Another database has triggers of its own.
            XCTAssertEqual(try run(["db", "create", "shop"]).status, 0)
            result = try run(["triggers", "list", "--json", "--db", "shop"])
            XCTAssertEqual(try result.json(), .object(["triggers": .array([])]))

            result = try run(["triggers", "remove", "notify"])
            XCTAssertEqual(result.stdout, "removed trigger notify\n", result.stderr)
            result = try run(["triggers", "remove", "notify"])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("not_found"), result.stderr)

            for output in outputs { XCTAssertFalse(output.contains(hookSecret), "the secret is never printed") }
        }
    }

    func testBadArgumentsAndANonAdminAreRefused() async throws {
        try await withCLISecureServer(rules: rules) { server in
            let admin = ["HEARTH_TOKEN": CLITestSecrets.admin]
            let secretFile = try server.file("hook.secret", hookSecret)
            let shortFile = try server.file("short.secret", "too-short")
            let add = ["triggers", "add", "notify", "--path", "/m/{id}", "--target", "http://127.0.0.1:9/hook"]
            let usage: [[String]] = [
                add, add + ["--secret-file", secretFile, "--secret-env", "X"], add + ["--secret-file", shortFile],
                add + ["--secret-env", "HEARTH_TEST_UNSET_VARIABLE"],
                add + ["--secret-file", secretFile, "--on", "oops"],
                add + ["--secret-file", secretFile, "--header", "no-colon"],
                ["triggers", "remove", "bad name"], ["triggers", "dead-letters", "n", "--limit", "0"],
            ]
            for arguments in usage {
                let result = try server.hearth(arguments, environment: admin)
                XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            }
            let refused: [[String]] = [
                ["triggers", "list"], ["triggers", "status"], add + ["--secret-file", secretFile],
                ["triggers", "remove", "notify"], ["triggers", "dead-letters", "notify"],
                ["triggers", "replay", "notify"],
            ]
            for arguments in refused {
                let result = try server.hearth(arguments)
                XCTAssertEqual(result.status, 1, "\(arguments)")
                XCTAssertTrue(result.stderr.contains("permission_denied"), "\(arguments): \(result.stderr)")
            }
            let list = try server.hearth(["triggers", "list", "--json"], environment: admin)
            XCTAssertEqual(try list.json(), .object(["triggers": .array([])]))
        }
    }

    /// A delivery nothing answers (port 9 refuses) becomes a dead letter after `--max-age-seconds`;
    /// `status`, `dead-letters` and `replay --id` show and queue it.
    func testADeadLetterIsShownAndReplayed() async throws {
        try await withCLISecureServer(rules: rules) { server in
            let admin = ["HEARTH_TOKEN": CLITestSecrets.admin]
            let secretFile = try server.file("hook.secret", hookSecret)
            var result = try server.hearth(
                [
                    "triggers", "add", "notify", "--path", "/messages/{id}", "--on", "create", "--target",
                    "http://127.0.0.1:9/hook", "--secret-file", secretFile, "--max-age-seconds", "1",
                ], environment: admin)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try server.hearth(["set", "/messages/m1", #"{"text":"hi"}"#], environment: admin)
            XCTAssertEqual(result.status, 0, result.stderr)

            var letters: [JSONValue] = []
            let deadline = Date().addingTimeInterval(15)
            while letters.isEmpty, Date() < deadline {
                try await Task.sleep(nanoseconds: 200_000_000)
                result = try server.hearth(["triggers", "dead-letters", "notify", "--json"], environment: admin)
                if case .array(let list)? = try result.json()["deadLetters"] { letters = list }
            }
            XCTAssertEqual(letters.count, 1, result.stdout)
            let id = try XCTUnwrap(letters.first?["id"]?.stringValue)
            XCTAssertTrue(id.hasSuffix(":/messages/m1"), id)

            result = try server.hearth(["triggers", "dead-letters", "notify"], environment: admin)
            let rows = result.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            XCTAssertEqual(rows.first, ["ID", "REV", "PATH", "KIND", "ATTEMPTS", "LAST-ERROR"], result.stdout)
            XCTAssertEqual(rows.count, 2, result.stdout)
            XCTAssertEqual(rows.last?.first, id, result.stdout)
            XCTAssertEqual(rows.last.map { Array($0[2...3]) }, ["/messages/m1", "create"], result.stdout)

            result = try server.hearth(["triggers", "status", "notify", "--json"], environment: admin)
            XCTAssertEqual(try result.json()["deadLetters"], .int(1), result.stdout)
            XCTAssertNotEqual(try result.json()["lastError"], .null, result.stdout)
            result = try server.hearth(["triggers", "status"], environment: admin)
            let status = result.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            XCTAssertEqual(status.last?.first, "notify", result.stdout)
            XCTAssertEqual(status.last?[8], "1", "the DEAD column: \(result.stdout)")

            result = try server.hearth(["triggers", "replay", "notify", "--id", id], environment: admin)
            XCTAssertEqual(result.stdout, "queued 1 dead letter of notify for delivery\n", result.stderr)
            result = try server.hearth(["triggers", "replay", "notify", "--id", "no-such-event"], environment: admin)
            XCTAssertEqual(result.stdout, "queued 0 dead letters of notify for delivery\n", result.stderr)
        }
    }
}
