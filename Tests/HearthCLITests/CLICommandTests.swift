import Foundation
import HearthJSON
import XCTest

/// The `hearth` executable's data commands against a real server: output, ordering, exit status.
final class CLICommandTests: XCTestCase {
    let dinosaurs = """
        {"lambeosaurus":{"height":2.1,"length":12.5,"weight":5000},\
        "stegosaurus":{"height":4,"length":9,"weight":2500},\
        "bruhathkayosaurus":{"height":25,"length":44,"weight":135000},\
        "linhenykus":{"height":0.6,"length":1,"weight":3}}
        """

    func testWritesAndReads() async throws {
        try await withCLIServer { server in
            let url = server.url
            var result = try hearth("set", "/dinosaurs", dinosaurs, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, "")
            XCTAssertEqual(
                try hearth("get", "/dinosaurs/stegosaurus", url: url).json(),
                .object(["height": .int(4), "length": .int(9), "weight": .int(2500)]))

            result = try hearth("update", "/dinosaurs", #"{"stegosaurus/height":5,"linhenykus":null}"#, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try hearth("get", "/dinosaurs/stegosaurus/height", url: url).json(), .int(5))
            XCTAssertEqual(
                try hearth("get", "/dinosaurs", "--shallow", url: url).json().keys,
                ["bruhathkayosaurus", "lambeosaurus", "stegosaurus"])

            result = try hearth("push", "/posts", #"{"title":"Announcing COBOL"}"#, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            let key = try XCTUnwrap(try result.json().stringValue)
            XCTAssertEqual(key.utf8.count, 20)
            XCTAssertEqual(try hearth("get", "/posts/\(key)/title", url: url).json(), .string("Announcing COBOL"))

            // The value from stdin and from a file; priorities in export format.
            XCTAssertEqual(
                try hearth("set", "/users/ada", "-", url: url, stdin: #"{"name":"Ada","born":1815}"#).status, 0)
            XCTAssertEqual(try hearth("get", "/users/ada/born", url: url).json(), .int(1815))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "hearth-cli-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(#"{"name":"Grace",".priority":1}"#.utf8).write(to: file)
            XCTAssertEqual(try hearth("set", "/users/grace", "--file", file.path, url: url).status, 0)
            XCTAssertEqual(
                try hearth("get", "/users/grace", "--export", url: url).json(),
                .object(["name": .string("Grace"), ".priority": .int(1)]))
            XCTAssertEqual(try hearth("get", "/users/grace", url: url).json(), .object(["name": .string("Grace")]))

            XCTAssertEqual(try hearth("remove", "/users", url: url).status, 0)
            result = try hearth("get", "/users", url: url)
            XCTAssertEqual(result.status, 0)
            XCTAssertEqual(result.stdout, "null\n")

            // --url before the subcommand overrides $HEARTH_URL.
            result = try hearth("--url", url, "get", "/posts/\(key)/title", url: "hearth://127.0.0.1:1")
            XCTAssertEqual(try result.json(), .string("Announcing COBOL"))
        }
    }

    func testQueryFlagsKeepTheQueryOrder() async throws {
        try await withCLIServer { server in
            let url = server.url
            XCTAssertEqual(try hearth("set", "/dinosaurs", dinosaurs, url: url).status, 0)
            XCTAssertEqual(try hearth("set", "/scores", #"{"a":3,"b":1,"c":2,"d":1}"#, url: url).status, 0)
            func keys(_ arguments: String...) throws -> [String] {
                let result = try CLIProcess(arguments, url: url).finish()
                XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
                return try result.json().keys
            }
            XCTAssertEqual(
                try keys("get", "/dinosaurs", "--order-by-child", "height"),
                ["linhenykus", "lambeosaurus", "stegosaurus", "bruhathkayosaurus"])
            XCTAssertEqual(
                try keys("get", "/dinosaurs", "--order-by-child", "height", "--limit-to-last", "2"),
                ["stegosaurus", "bruhathkayosaurus"])
            XCTAssertEqual(
                try keys("get", "/dinosaurs", "--order-by-child", "height", "--start-at", "3", "--end-before", "25"),
                ["stegosaurus"])
            XCTAssertEqual(
                try keys("get", "/dinosaurs", "--order-by-child", "length", "--equal-to", "44"), ["bruhathkayosaurus"])
            XCTAssertEqual(
                try keys("get", "/dinosaurs", "--order-by-key", "--start-after", #""linhenykus""#), ["stegosaurus"])
            XCTAssertEqual(
                try keys("get", "/dinosaurs", "--order-by-key", "--end-at", #""c""#, "--limit-to-first", "1"),
                ["bruhathkayosaurus"])
            XCTAssertEqual(try keys("get", "/scores", "--order-by-value"), ["b", "d", "c", "a"])
            XCTAssertEqual(
                try keys("get", "/scores", "--order-by-value", "--start-at", "1", "--start-at-key", "c"),
                ["d", "c", "a"])
            XCTAssertEqual(
                try keys("get", "/scores", "--order-by-value", "--equal-to", "1", "--equal-to-key", "d"), ["d"])
            XCTAssertEqual(try keys("get", "/scores", "--order-by-value", "--end-at", "1", "--end-at-key", "b"), ["b"])
            XCTAssertEqual(
                try keys("get", "/scores", "--order-by-value", "--start-after", "1", "--start-after-key", "b"),
                ["d", "c", "a"])
            XCTAssertEqual(
                try keys("get", "/scores", "--order-by-value", "--end-before", "2", "--end-before-key", "c"),
                ["b", "d"])
            XCTAssertEqual(try keys("get", "/scores", "--order-by-priority", "--limit-to-last", "1"), ["d"])
        }
    }

    /// Negative numbers are values, not options: as the value of a write and as a query bound,
    /// before or after other options. A bare word for a JSON argument is refused with the
    /// quoting to use; an unknown option is still refused.
    func testNegativeNumbersAreValuesAndABareWordGetsTheQuotingToUse() async throws {
        try await withCLIServer { server in
            let url = server.url
            var result = try hearth("set", "/users/alice/age", "-5", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try hearth("get", "/users/alice/age", url: url).json(), .int(-5))
            result = try hearth("set", "/users/bob/age", "-1.5e2", "--timeout", "5", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try hearth("get", "/users/bob/age", url: url).json().doubleValue, -150)
            XCTAssertEqual(try hearth("set", "/users/carol/age", "--", "-7", url: url).status, 0)
            XCTAssertEqual(try hearth("push", "/readings", "-3", url: url).status, 0)

            result = try hearth(
                "get", "/users", "--order-by-child", "age", "--start-at", "-10", "--end-at", "-1", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json().keys, ["carol", "alice"])
            result = try hearth("get", "/users", "--order-by-child", "age", "--equal-to", "-150", url: url)
            XCTAssertEqual(try result.json().keys, ["bob"])
            result = try hearth("rules", "simulate", "--as", "admin", "setPriority", "/users", "-5", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["allowed"], .bool(true))

            for arguments in [["get", "/users", "--order-by-child", "age", "--start-at", "a"], ["set", "/x", "ada"]] {
                result = try CLIProcess(arguments, url: url).finish()
                XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains(#"'"a"'"#) || result.stderr.contains(#"'"ada"'"#), result.stderr)
            }
            for arguments in [["set", "/x", "1", "--frobnicate"], ["set", "/x", "1", "2"], ["set", "/x", "-x"]] {
                result = try CLIProcess(arguments, url: url).finish()
                XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
                XCTAssertEqual(try hearth("get", "/x", url: url).json(), .null, "\(arguments)")
            }
        }
    }

    func testExitStatusAndOnlyJSONOnStdout() async throws {
        try await withCLIServer { server in
            let url = server.url
            let usage: [[String]] = [
                ["get"],  // missing path
                ["frobnicate"],
                ["get", "/x", "--order-by-key", "--order-by-value"],
                ["get", "/x", "--start-at", "not json"],
                ["get", "/x", "--start-at-key", "a"],
                ["get", "/x", "--shallow", "--limit-to-first", "1"],
                ["get", "/x", "--order-by-key", "--start-at", "1"],  // a key bound must be a string
                ["get", "/a.b"],
                ["set", "/x"],
                ["set", "/x", "{not json"],
                ["set", "/x", #"{"a.b":1}"#],
                ["update", "/x", "[1]"],
                ["update", "/x", #"{"a":1,"a/b":2}"#],
                ["listen", "/x", "--events", "child_eaten"],
                ["get", "/x", "--url", "http://nope"],
            ]
            for arguments in usage {
                let result = try CLIProcess(arguments, url: url).finish()
                XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
                XCTAssertEqual(result.stdout, "", "\(arguments)")
                XCTAssertFalse(result.stderr.isEmpty, "\(arguments)")
            }
            // Nothing listens on port 1: a connection error.
            for arguments in [["get", "/x"], ["set", "/x", "1"], ["ping"]] {
                let result = try CLIProcess(arguments + ["--timeout", "0.5"], url: "hearth://127.0.0.1:1").finish()
                XCTAssertEqual(result.status, 1, "\(arguments)")
                XCTAssertEqual(result.stdout, "")
                XCTAssertTrue(result.stderr.contains("hearth://127.0.0.1:1"), result.stderr)
            }
            // A server error: a value nested deeper than the limit.
            let deep = String(repeating: #"{"a":"#, count: 40) + "1" + String(repeating: "}", count: 40)
            var result = try hearth("set", "/x", deep, url: url)
            XCTAssertEqual(result.stdout, "")
            XCTAssertTrue(result.stderr.contains("too_deep"), result.stderr)
            XCTAssertEqual(result.status, 1)

            result = try hearth("ping", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            let ping = try result.json()
            XCTAssertNotNil(ping["ms"]?.doubleValue)
            XCTAssertNotNil(ping["serverTime"]?.int64Value)
        }
    }

    func testListenPrintsEventsUntilInterrupted() async throws {
        try await withCLIServer { server in
            let url = server.url
            XCTAssertEqual(try hearth("set", "/dinosaurs", dinosaurs, url: url).status, 0)
            let listen = try CLIProcess(
                [
                    "listen", "/dinosaurs", "--order-by-child", "height", "--limit-to-last", "2", "--events",
                    "child_added,child_removed",
                ],
                url: url)
            defer { if listen.process.isRunning { kill(listen.process.processIdentifier, SIGKILL) } }
            var lines = try listen.waitForLines(2)
            XCTAssertEqual(
                try lines.map { try JSONParser.parse($0)["key"] },
                [.string("stegosaurus"), .string("bruhathkayosaurus")])
            XCTAssertEqual(try hearth("set", "/dinosaurs/argentinosaurus", #"{"height":30}"#, url: url).status, 0)
            lines = try listen.waitForLines(4)
            let events = try lines.map { try JSONParser.parse($0) }
            XCTAssertEqual(
                events[2],
                .object([
                    "event": .string("child_removed"), "key": .string("stegosaurus"),
                    "value": .object(["height": .int(4), "length": .int(9), "weight": .int(2500)]),
                ]))
            XCTAssertEqual(
                events[3],
                .object([
                    "event": .string("child_added"), "key": .string("argentinosaurus"),
                    "value": .object(["height": .int(30)]), "prev": .string("bruhathkayosaurus"),
                ]))

            kill(listen.process.processIdentifier, SIGINT)
            let result = try listen.finish(timeout: 10)
            XCTAssertEqual(result.status, 0, result.stderr)
        }
    }
}
