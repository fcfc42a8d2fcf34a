import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Precedence: defaults < file < environment < flags; typos are errors, not silence.
final class ConfigurationTests: XCTestCase {
    func testDefaults() {
        let c = ServerConfiguration()
        XCTAssertEqual(c.host, "127.0.0.1")
        XCTAssertEqual(c.port, 9000)
        XCTAssertEqual(c.dataDirectory, "./data")
        XCTAssertEqual(c.fsync, .always)
        XCTAssertEqual(c.maxMessageBytes, 16 * 1024 * 1024)
        XCTAssertEqual(c.maxOutboundBytes, 64 * 1024 * 1024)
        XCTAssertEqual(c.limits.maxDepth, 32)
        XCTAssertEqual(c.limits.maxKeyBytes, 768)
    }

    func testPrecedenceFileThenEnvironmentThenFlags() throws {
        var c = ServerConfiguration()
        try c.apply(
            file: json(#"{"//port":"comment","port":9100,"host":"0.0.0.0","fsync":"never","maxDepth":20}"#),
            source: "test")
        XCTAssertEqual(c.port, 9100)
        XCTAssertEqual(c.limits.maxDepth, 20)
        try c.apply(environment: ["HEARTH_PORT": "9200", "HEARTH_FSYNC": "everysec", "UNRELATED": "x"])
        XCTAssertEqual(c.port, 9200)
        XCTAssertEqual(c.host, "0.0.0.0")
        XCTAssertEqual(c.fsync, .everysec)
        try c.apply(setting: "port", text: "9300", source: "flag --port")
        XCTAssertEqual(c.port, 9300)
    }

    func testDatabaseSettingsFromTheFileAndTheEnvironment() throws {
        var c = ServerConfiguration()
        XCTAssertEqual(c.databases.defaultName, "default")
        XCTAssertNil(c.databases.autoCreate)
        try c.apply(
            file: json(
                #"{"defaultDatabase":"main","maxDatabases":50,"idleDatabaseSeconds":60,"databaseDomains":["db.example.com"],"databases":{"shop":{"maxBytes":1000000,"maxConnections":10,"adminSecrets":["s"]},"*":{"maxConnections":5}}}"#
            ), source: "test")
        XCTAssertEqual(c.databases.defaultName, "main")
        XCTAssertEqual(c.databases.maxDatabases, 50)
        XCTAssertEqual(c.databases.idleCloseSeconds, 60)
        XCTAssertEqual(c.databases.domains, ["db.example.com"])
        XCTAssertEqual(c.databases.settings(for: "shop").maxBytes, 1_000_000)
        XCTAssertEqual(c.databases.settings(for: "shop").adminSecrets, ["s"])
        XCTAssertEqual(c.databases.settings(for: "blog").maxConnections, 5)
        try c.apply(environment: ["HEARTH_AUTO_CREATE_DATABASES": "0", "HEARTH_DEFAULT_DATABASE": "prod"])
        XCTAssertEqual(c.databases.autoCreate, false)
        XCTAssertEqual(c.databases.defaultName, "prod")
        for (file, expected) in [
            (#"{"defaultDatabase":"Main"}"#, "lowercase letters"),
            (#"{"databases":{"No_Good":{}}}"#, "lowercase letters"),
            (#"{"databases":{"shop":{"maxBytes":-1}}}"#, "positive whole numbers"),
            (#"{"databases":{"shop":{"quota":1}}}"#, "unknown setting \"quota\""),
        ] {
            var bad = ServerConfiguration()
            XCTAssertThrowsError(try bad.apply(file: json(file), source: "f"), file) {
                XCTAssertTrue("\($0)".contains(expected), "\($0)")
            }
        }
        XCTAssertThrowsError(try c.apply(environment: ["HEARTH_AUTO_CREATE_DATABASES": "maybe"]))
    }

    func testBadSettingsAreErrors() {
        var c = ServerConfiguration()
        XCTAssertThrowsError(try c.apply(file: json(#"{"prot":9000}"#), source: "f")) {
            XCTAssertTrue("\($0)".contains("unknown setting \"prot\""))
        }
        XCTAssertThrowsError(try c.apply(environment: ["HEARTH_PORT": "ninety"]))
        XCTAssertThrowsError(try c.apply(environment: ["HEARTH_FSYNC": "sometimes"]))
        XCTAssertThrowsError(try c.apply(file: json(#"{"port":70000}"#), source: "f"))
        XCTAssertThrowsError(try c.apply(file: json(#"[1]"#), source: "f"))
    }

    func testFirebaseAuthSettings() throws {
        var c = ServerConfiguration()
        try c.apply(
            file: json(
                #"{"firebaseProjectId":"demo-project","jwtPublicKeysURL":"https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com","jwtPublicKeysCAFile":"/etc/ssl/ca.pem"}"#
            ), source: "f")
        XCTAssertEqual(c.tokens.firebaseProjectId, "demo-project")
        XCTAssertEqual(
            c.tokens.jwtPublicKeysURL,
            "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")
        XCTAssertEqual(c.tokens.jwtPublicKeysCAFile, "/etc/ssl/ca.pem")
        for (file, expected) in [
            (#"{"firebaseProjectId":"Demo Project"}"#, "firebaseProjectId"),
            (#"{"firebaseProjectId":""}"#, "firebaseProjectId"),
            (#"{"firebaseProjectId":7}"#, "must be a string"),
            (#"{"jwtPublicKeysURL":"ftp://keys.example/jwks"}"#, "http:// or https://"),
            (#"{"jwtPublicKeysURL":"https://user:pw@keys.example/jwks"}"#, "user name"),
            (#"{"jwtPublicKeysURL":"https://keys.example:99999/jwks"}"#, "port"),
            (#"{"jwtPublicKeysURL":["https://a.example/jwks"]}"#, "must be a string"),
        ] {
            var bad = ServerConfiguration()
            XCTAssertThrowsError(try bad.apply(file: json(file), source: "f"), file) {
                XCTAssertTrue("\($0)".contains(expected), "\($0)")
            }
        }
    }

    func testShippedConfigFileLoadsAndEqualsTheDefaults() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/hearth.json").standardized.path
        var c = ServerConfiguration()
        try c.apply(fileAt: path)
        var expected = ServerConfiguration()
        expected.rulesFile = c.rulesFile
        XCTAssertEqual(c, expected, "config/hearth.json must document the defaults")
    }
}
