import XCTest

@testable import HearthClient

/// `hearth://` URLs with one or several addresses (docs/client.md "Clusters and failover") and
/// a database (`?ns=name`, docs/client.md "Choosing a database").
final class DatabaseURLTests: XCTestCase {
    private func addresses(_ url: String) throws -> [String] {
        try DatabaseURL(url).endpoints.map(\.address)
    }

    private func message(_ url: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try DatabaseURL(url)
            XCTFail("\(url) was accepted", file: file, line: line)
            return ""
        } catch {
            XCTAssertEqual(error.code, .invalidURL, file: file, line: line)
            return error.message
        }
    }

    func testASingleAddressIsParsedAsBefore() throws {
        let url = try DatabaseURL("hearth://example.com:9100/")
        XCTAssertEqual(url.endpoints, [DatabaseURL.Endpoint(host: "example.com", port: 9100, tls: false)])
        XCTAssertEqual(url.description, "hearth://example.com:9100")
        XCTAssertEqual(try DatabaseURL("hearth://localhost").description, "hearth://localhost:9000")
        XCTAssertEqual(try addresses("hearth://[::1]"), ["[::1]:9000"])
        XCTAssertEqual(message("hearth://x:99999"), #""hearth://x:99999" has an invalid port "99999""#)
        XCTAssertEqual(message("hearth://"), #""hearth://" has no host (expected hearth://host:port)"#)
    }

    func testSeveralAddressesKeepTheirOrderAndTakeTheDefaultPortEach() throws {
        let url = try DatabaseURL("hearth://h1:9001,h2,[::1]:9003,10.0.0.4:9004/")
        XCTAssertEqual(url.endpoints.map(\.address), ["h1:9001", "h2:9000", "[::1]:9003", "10.0.0.4:9004"])
        XCTAssertEqual(url.endpoints.map(\.host), ["h1", "h2", "::1", "10.0.0.4"])
        XCTAssertEqual(url.description, "hearth://h1:9001,h2:9000,[::1]:9003,10.0.0.4:9004")
        XCTAssertEqual(url.endpoints[2].description, "hearth://[::1]:9003")
        XCTAssertFalse(url.tls)
        XCTAssertEqual(try addresses("hearth://h1:9000, h2:9000"), ["h1:9000", "h2:9000"], "spaces around commas")
    }

    func testTLSAppliesToEveryAddress() throws {
        let url = try DatabaseURL("hearths://a.example:9443,b.example")
        XCTAssertTrue(url.tls)
        XCTAssertEqual(url.endpoints.map(\.tls), [true, true])
        XCTAssertEqual(url.endpoints.map(\.description), ["hearths://a.example:9443", "hearths://b.example:9000"])
        XCTAssertEqual(
            try Database(validatingURL: "hearths://a.example:9443,b.example").url,
            "hearths://a.example:9443,b.example:9000")
    }

    func testBadAddressesAreNamedWithTheirPosition() {
        XCTAssertEqual(
            message("hearth://h1:9000,,h3:9000"),
            #""hearth://h1:9000,,h3:9000": address 2 of 3 is empty (separate addresses with single commas: "#
                + "hearth://host1:port,host2:port)")
        XCTAssertEqual(
            message("hearth://h1:9000,"),
            #""hearth://h1:9000,": address 2 of 2 is empty (separate addresses with single commas: "#
                + "hearth://host1:port,host2:port)")
        XCTAssertEqual(
            message("hearth://h1:9000,h2:abc"), #""hearth://h1:9000,h2:abc" has an invalid port "abc" (address 2 of 2)"#
        )
        XCTAssertEqual(
            message("hearth://h1:0,h2"), #""hearth://h1:0,h2" has an invalid port "0" (address 1 of 2)"#)
        XCTAssertEqual(
            message("hearth://h1,:9000"),
            #""hearth://h1,:9000" has no host (expected hearth://host:port) (address 2 of 2)"#)
        XCTAssertEqual(
            message("hearth://h1,[::1"), #""hearth://h1,[::1" has an unterminated [IPv6] host (address 2 of 2)"#)
        XCTAssertEqual(
            message("hearth://h1,h2/x"),
            #""hearth://h1,h2/x" has no host (expected hearth://host:port) (address 2 of 2)"#)
        XCTAssertTrue(message("http://h1,h2").hasSuffix("it must start with hearth:// (or hearths:// for TLS)"))
    }

    func testNsChoosesTheDatabase() throws {
        let url = try DatabaseURL("hearth://example.com:9100/?ns=shop")
        XCTAssertEqual(url.endpoints, [DatabaseURL.Endpoint(host: "example.com", port: 9100, tls: false)])
        XCTAssertEqual(url.databaseName, "shop")
        XCTAssertEqual(url.description, "hearth://example.com:9100/?ns=shop")
        XCTAssertEqual(url.base, "hearth://example.com:9100")
        XCTAssertEqual(try DatabaseURL("hearth://localhost?ns=a-1").databaseName, "a-1", "no slash before ?")
        XCTAssertEqual(try DatabaseURL("hearth://[::1]/?ns=x").endpoints.map(\.address), ["[::1]:9000"])
        let longest = String(repeating: "a", count: 63)
        XCTAssertEqual(try DatabaseURL("hearth://h/?ns=\(longest)").databaseName, longest)
        XCTAssertEqual(try DatabaseURL("hearth://h/?ns=0").databaseName, "0")
    }

    func testWithoutNsThereIsNoDatabaseName() throws {
        XCTAssertNil(try DatabaseURL("hearth://example.com:9100").databaseName)
        XCTAssertNil(try DatabaseURL("hearth://example.com:9100/").databaseName, "a bare trailing slash")
        XCTAssertNil(try DatabaseURL("hearth://example.com:9100/?").databaseName)
        XCTAssertEqual(try DatabaseURL("hearth://example.com:9100/").description, "hearth://example.com:9100")
        let db = try Database(validatingURL: "hearth://127.0.0.1:1/")
        XCTAssertNil(db.databaseName)
        db.goOffline()
    }

    func testNsWithSeveralAddressesAndTLS() throws {
        let url = try DatabaseURL("hearths://h1:9443, h2/?ns=tenant-7")
        XCTAssertTrue(url.tls)
        XCTAssertEqual(url.endpoints.map(\.address), ["h1:9443", "h2:9000"])
        XCTAssertEqual(url.databaseName, "tenant-7")
        XCTAssertEqual(url.description, "hearths://h1:9443,h2:9000/?ns=tenant-7")
        XCTAssertEqual(try DatabaseURL("hearth://h1:9000,h2:9001?ns=shop").endpoints.count, 2)
        XCTAssertEqual(
            message("hearth://h1:9000,,h3/?ns=shop"),
            #""hearth://h1:9000,,h3/?ns=shop": address 2 of 3 is empty (separate addresses with single commas: "#
                + "hearth://host1:port,host2:port)")
    }

    func testTheDatabaseShowsInTheURLs() throws {
        let db = try Database(validatingURL: "hearth://127.0.0.1:1,127.0.0.1:2/?ns=shop")
        defer { db.goOffline() }
        XCTAssertEqual(db.databaseName, "shop")
        XCTAssertEqual(db.url, "hearth://127.0.0.1:1,127.0.0.1:2/?ns=shop")
        XCTAssertEqual(db.reference().url, "hearth://127.0.0.1:1,127.0.0.1:2/?ns=shop")
        XCTAssertEqual(db.reference(withPath: "users/ada").url, "hearth://127.0.0.1:1,127.0.0.1:2/users/ada?ns=shop")
    }

    func testBadDatabaseNamesAreRefusedWithTheRule() {
        let rule = "a name is 1–63 lowercase letters, digits and hyphens, not starting or ending with a hyphen"
        XCTAssertEqual(
            message("hearth://h/?ns=Shop"), #""hearth://h/?ns=Shop": invalid database name "Shop": "# + rule)
        XCTAssertEqual(message("hearth://h/?ns="), #""hearth://h/?ns=": invalid database name "": "# + rule)
        XCTAssertEqual(message("hearth://h/?ns"), #""hearth://h/?ns": invalid database name "": "# + rule)
        for name in ["-shop", "shop-", "sh_op", "sh.op", "sh%6Fp", "ßhop", String(repeating: "a", count: 64)] {
            XCTAssertEqual(
                message("hearth://h1,h2/?ns=\(name)"),
                "\"hearth://h1,h2/?ns=\(name)\": invalid database name \"\(name)\": \(rule)")
        }
        XCTAssertEqual(
            message("hearth://h/?db=shop"),
            #""hearth://h/?db=shop" has an unknown parameter "db" (the only one is ns, the database: ?ns=name)"#)
        XCTAssertEqual(
            message("hearth://h/?ns=a&ns=b"), #""hearth://h/?ns=a&ns=b" names the database (ns) more than once"#)
        XCTAssertEqual(
            message("hearth://h/x?ns=shop"), #""hearth://h/x?ns=shop" has no host (expected hearth://host:port)"#,
            "a path before the query")
        XCTAssertThrowsError(try Database(validatingURL: "hearth://h/?ns=UPPER")) { error in
            XCTAssertEqual((error as? HearthError)?.code, .invalidURL)
        }
        XCTAssertThrowsError(try Database.validateDatabaseName("a--")) { error in
            XCTAssertEqual(error as? HearthError, HearthError(.badRequest, #"invalid database name "a--": "# + rule))
        }
        XCTAssertNoThrow(try Database.validateDatabaseName("a--b"))
    }

    func testARoundOfFailuresIsOneErrorNamingEveryAddress() {
        let refused = [
            HearthError(.connectionRefused, "cannot connect to hearth://a:1: connection refused"),
            HearthError(.connectionRefused, "cannot connect to hearth://b:2: connection refused"),
        ]
        XCTAssertEqual(
            Repo.roundFailure(refused),
            HearthError(
                .connectionRefused,
                "cannot connect to hearth://a:1: connection refused; cannot connect to hearth://b:2: connection refused"
            ))
        let mixed = [refused[0], HearthError(.unknownHost, "cannot connect to hearth://c:3: unknown host \"c\"")]
        XCTAssertEqual(Repo.roundFailure(mixed).code, .connectionFailed)
        XCTAssertEqual(Repo.roundFailure([refused[1]]), refused[1])
    }
}
