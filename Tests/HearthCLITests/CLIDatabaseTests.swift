import Foundation
import HearthJSON
import XCTest

/// `hearth db list|create|info|delete` and `--db` against a real server (README "Command-line
/// client"), and `hearth check --db` on its data directory.
final class CLIDatabaseTests: XCTestCase {
    func testASessionWithASecondDatabase() async throws {
        try await withCLIServer { server in
            let url = server.url
            var result = try hearth("set", "/greeting", #""hello default""#, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)

            result = try hearth("db", "create", "shop", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stdout.hasPrefix("created database shop in "), result.stdout)
            XCTAssertTrue(result.stdout.contains("/databases/shop"), result.stdout)
            result = try hearth("db", "create", "shop", url: url)
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("already exists"), result.stderr)

            // Written and read back in shop; the default database does not change.
            result = try hearth("set", "--db", "shop", "/items/a", #"{"n":1}"#, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("push", "--db", "shop", "/log", #""created""#, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("get", "--db", "shop", "/items", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json(), .object(["a": .object(["n": .int(1)])]))
            result = try hearth("get", "--db", "shop", "/greeting", url: url)
            XCTAssertEqual(result.stdout, "null\n", result.stderr)
            result = try hearth("get", "/", url: url)
            XCTAssertEqual(try result.json(), .object(["greeting": .string("hello default")]))
            result = try hearth("get", "--db", "default", "/", url: url)
            XCTAssertEqual(try result.json(), .object(["greeting": .string("hello default")]))
            // `--db` replaces a database the URL names.
            result = try hearth("get", "--db", "shop", "/items/a/n", url: url + "/?ns=default")
            XCTAssertEqual(result.stdout, "1\n", result.stderr)
            result = try hearth("get", "/items/a/n", url: url + "/?ns=shop")
            XCTAssertEqual(result.stdout, "1\n", result.stderr)

            // Export from shop, import into the default database.
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "hearth-db-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            result = try hearth("export", "--db", "shop", "/items", file.path, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("import", "/copy", file.path, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("import", "--db", "shop", "/copy", file.path, url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("get", "/copy", url: url)
            XCTAssertEqual(try result.json(), .object(["a": .object(["n": .int(1)])]))
            result = try hearth("get", "--db", "shop", "/copy/a/n", url: url)
            XCTAssertEqual(result.stdout, "1\n", result.stderr)

            result = try hearth("db", "list", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            XCTAssertTrue(lines.first?.hasPrefix("NAME") ?? false, result.stdout)
            XCTAssertTrue(lines.count > 2 && lines[1].hasPrefix("default*"), result.stdout)
            XCTAssertTrue(lines.count > 2 && lines[2].hasPrefix("shop "), result.stdout)
            result = try hearth("db", "list", "--json", url: url)
            let databases = try result.json()["databases"]
            guard case .array(let list)? = databases else { return XCTFail(result.stdout) }
            XCTAssertEqual(list.map { $0["name"] }, [.string("default"), .string("shop")])
            XCTAssertEqual(list.map { $0["default"] }, [.bool(true), .bool(false)])

            result = try hearth("db", "info", "shop", "--json", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["name"], .string("shop"))
            XCTAssertEqual(try result.json()["default"], .bool(false))
            result = try hearth("db", "info", "shop", url: url)
            XCTAssertTrue(result.stdout.hasPrefix("name"), result.stdout)
            XCTAssertTrue(result.stdout.contains("directory"), result.stdout)
            result = try hearth("db", "info", "nosuch", url: url)
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("not_found"), result.stderr)

            result = try hearth("db", "delete", "default", url: url)
            XCTAssertEqual(result.status, 1, result.stdout)
            result = try hearth("db", "delete", "shop", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            let prefix = "deleted database shop; its data moved to "
            XCTAssertTrue(result.stdout.hasPrefix(prefix), result.stdout)
            let movedTo = String(result.stdout.dropFirst(prefix.count).dropLast())
            XCTAssertTrue(movedTo.contains("/trash/shop-"), movedTo)
            XCTAssertTrue(FileManager.default.fileExists(atPath: movedTo + "/"), movedTo)
            result = try hearth("db", "list", "--json", url: url)
            guard case .array(let remaining)? = try result.json()["databases"] else { return XCTFail(result.stdout) }
            XCTAssertEqual(remaining.map { $0["name"] }, [.string("default")])
            result = try hearth("get", "/greeting", url: url)
            XCTAssertEqual(result.stdout, #""hello default""# + "\n")

            result = try hearth("db", "create", "scratch", "--json", url: url)
            XCTAssertEqual(try result.json()["name"], .string("scratch"))
            result = try hearth("db", "delete", "scratch", "--purge", "--json", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json(), .object(["deleted": .string("scratch"), "purged": .bool(true)]))
        }
    }

    func testBadNamesAreUsageErrors() async throws {
        let rule = "a name is 1–63 lowercase letters, digits and hyphens, not starting or ending with a hyphen"
        var result = try hearth("get", "--db", "Shop", "/", url: "hearth://127.0.0.1:1")
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains(#"--db: invalid database name "Shop": "# + rule), result.stderr)
        result = try hearth("db", "create", "sh_op", url: "hearth://127.0.0.1:1")
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains(#"invalid database name "sh_op": "# + rule), result.stderr)
        result = try hearth("get", "/", url: "hearth://127.0.0.1:1/?ns=Shop")
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains(#"invalid database name "Shop""#), result.stderr)
        result = try hearth("check", "--db", "-", "/nonexistent", url: nil)
        XCTAssertEqual(result.status, 2, result.stderr)
    }

    func testAnUnknownDatabaseFailsTheConnectionWithTheServersError() async throws {
        try await withCLIServer(
            configure: { $0.databases.autoCreate = false },
            { server in
                let result = try hearth("get", "--db", "nosuch", "/", url: server.url)
                XCTAssertEqual(result.status, 1)
                XCTAssertTrue(result.stderr.hasPrefix(#"hearth: not_found: no database named "nosuch""#), result.stderr)
                let list = try hearth("db", "list", "--json", url: server.url)
                guard case .array(let databases)? = try list.json()["databases"] else { return XCTFail(list.stdout) }
                XCTAssertEqual(databases.map { $0["name"] }, [.string("default")], "nothing created")
            })
    }

    func testCheckTakesADatabase() async throws {
        let server = try await CLIServer.start()
        do {
            var result = try hearth("db", "create", "shop", url: server.url)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("set", "--db", "shop", "/a", "1", url: server.url)
            XCTAssertEqual(result.status, 0, result.stderr)
            await server.server.shutdown()
            let directory = server.directory
            result = try hearth("check", "--db", "shop", directory, url: nil)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["directory"], .string(directory + "/databases/shop"))
            XCTAssertEqual(try result.json()["ok"], .bool(true))
            result = try hearth("check", "--db", "default", directory, url: nil)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json()["directory"], .string(directory))
            result = try hearth("check", "--db", "main", "--default-db", "main", directory, url: nil)
            XCTAssertEqual(try result.json()["directory"], .string(directory))
            result = try hearth("check", "--db", "nosuch", directory, url: nil)
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(
                result.stderr.contains(#"holds no database named "nosuch" (no folder \#(directory)/databases/nosuch)"#),
                result.stderr)
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }

    func testOnAServerWithRulesTheDatabaseCommandsNeedTheAdminSecret() async throws {
        let rules = #"{"rules": {".read": "auth != null", ".write": "auth != null"}}"#
        try await withCLISecureServer(rules: rules) { server in
            var result = try server.hearth(["db", "create", "shop"])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("permission_denied"), result.stderr)
            result = try server.hearth(["db", "create", "shop", "--token", CLITestSecrets.admin])
            XCTAssertEqual(result.status, 0, result.stderr)
            // `use` goes first, then `auth`: the admin writes and reads in shop.
            result = try server.hearth(
                ["set", "--db", "shop", "/x", "1"], environment: ["HEARTH_TOKEN": CLITestSecrets.admin])
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try server.hearth(["get", "--db", "shop", "/x", "--token", CLITestSecrets.admin])
            XCTAssertEqual(result.stdout, "1\n", result.stderr)
            result = try server.hearth(["get", "/x", "--token", CLITestSecrets.admin])
            XCTAssertEqual(result.stdout, "null\n", result.stderr)
            result = try server.hearth(["db", "list", "--json", "--db", "shop", "--token", CLITestSecrets.admin])
            XCTAssertEqual(result.status, 0, result.stderr)
            guard case .array(let databases)? = try result.json()["databases"] else { return XCTFail(result.stdout) }
            XCTAssertEqual(databases.map { $0["name"] }, [.string("default"), .string("shop")])
        }
    }
}
