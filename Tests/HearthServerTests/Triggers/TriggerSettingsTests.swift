import Foundation
import HearthCore
import HearthJSON
import XCTest

@testable import HearthServer

/// `triggers` in the configuration: the fixed shape, globally and per database, secrets read at
/// load and never printed, and errors that name the field.
final class TriggerSettingsTests: XCTestCase {
    private var directory = ""
    private let secret = String(repeating: "s3cr3t-", count: 6)

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "trigger-settings-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try (secret + "\n").write(toFile: directory + "hook.secret", atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func parse(_ text: String, environment: [String: String] = [:]) throws -> [TriggerSettings] {
        try TriggerSettings.parseList(
            try JSONParser.parse(Array(text.utf8)), source: "test", baseDirectory: directory,
            environment: { environment[$0] })
    }

    func testTheIssuesShapeFromAConfigurationFile() throws {
        let file = directory + "hearth.json"
        try #"""
        {"triggers": [{"name": "notify", "path": "/messages/{id}", "on": ["create", "update", "delete"],
          "url": "http://127.0.0.1:8080/hook", "secretFile": "hook.secret",
          "headers": {"X-App": "chat"}, "timeoutMs": 2500, "maxConcurrency": 4, "maxAgeSeconds": 600,
          "caFile": "ca.pem"}],
         "databases": {"shop": {"triggers": [{"name": "orders", "path": "/orders/{order}/items/{item}",
          "on": ["write"], "url": "https://hooks.example.com/orders", "secretFile": "hook.secret"}]}}}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        var configuration = ServerConfiguration()
        try configuration.apply(fileAt: file)
        let notify = try XCTUnwrap(configuration.triggers.first)
        XCTAssertEqual(configuration.triggers.count, 1)
        XCTAssertEqual(notify.name, "notify")
        XCTAssertEqual(notify.pattern.segments, [.literal(Key("messages")), .wildcard("id")])
        XCTAssertEqual(notify.kinds, [.create, .update, .delete])
        XCTAssertEqual(notify.url, "http://127.0.0.1:8080/hook")
        XCTAssertEqual(notify.secret.bytes, Array(secret.utf8), "the file's final newline is not part of it")
        XCTAssertEqual(notify.headers, [TriggerHeader(name: "X-App", value: "chat")])
        XCTAssertEqual(notify.timeoutMilliseconds, 2500)
        XCTAssertEqual(notify.maxConcurrency, 4)
        XCTAssertEqual(notify.maxAgeSeconds, 600)
        XCTAssertEqual(notify.caFile, directory + "ca.pem", "relative to the configuration file")
        let orders = try XCTUnwrap(configuration.databases.settings(for: "shop").triggers.first)
        XCTAssertEqual(orders.kinds, Set(TriggerKind.allCases))
        XCTAssertEqual(orders.secret, notify.secret)
        XCTAssertEqual(orders.timeoutMilliseconds, 10_000)
        XCTAssertEqual(orders.maxConcurrency, 8)
        XCTAssertEqual(orders.maxAgeSeconds, 86_400)
        XCTAssertNil(orders.caFile)
        XCTAssertEqual(configuration.databases.settings(for: "other").triggers, [])
    }

    func testSecretFromTheEnvironmentNeverPrints() throws {
        let triggers = try parse(
            #"[{"name":"a","path":"/","url":"http://h/x","secretEnv":"HOOK_SECRET"}]"#,
            environment: ["HOOK_SECRET": secret])
        let trigger = try XCTUnwrap(triggers.first)
        XCTAssertEqual(trigger.secret.bytes, Array(secret.utf8))
        XCTAssertEqual(trigger.kinds, Set(TriggerKind.allCases), "no \"on\" means every kind")
        for printed in ["\(trigger)", String(describing: trigger), String(reflecting: trigger), "\(trigger.secret)"] {
            XCTAssertFalse(printed.contains("s3cr3t"), printed)
        }
    }

    func testErrorsNameTheField() {
        let base = #""name":"a","path":"/m/{id}","url":"http://h/x","secretEnv":"S""#
        let environment = ["S": secret, "SHORT": "abc"]
        let cases: [(String, String)] = [
            (#"{"triggers":1}"#, "\"triggers\" must be an array"),
            ("[1]", "test: triggers[0] must be an object"),
            (#"[{\#(base),"colour":"red"}]"#, "unknown setting \"colour\""),
            (#"[{"path":"/m","url":"http://h/x","secretEnv":"S"}]"#, "triggers[0].name is missing"),
            (#"[{"name":"a b","path":"/m","url":"http://h/x","secretEnv":"S"}]"#, "triggers[0].name"),
            (#"[{\#(base)},{\#(base)}]"#, "triggers[1].name: \"a\" is used twice"),
            (#"[{"name":"a","path":"m","url":"http://h/x","secretEnv":"S"}]"#, "triggers[0].path"),
            (#"[{"name":"a","path":"/m/{id}/{id}","url":"http://h/x","secretEnv":"S"}]"#, "appears twice"),
            (#"[{"name":"a","path":"/m/x{id}","url":"http://h/x","secretEnv":"S"}]"#, "triggers[0].path"),
            (#"[{"name":"a","path":"/m/a.b","url":"http://h/x","secretEnv":"S"}]"#, "triggers[0].path"),
            (#"[{"name":"a","path":"/m","url":"ftp://h/x","secretEnv":"S"}]"#, "\"url\""),
            (#"[{\#(base),"on":["upsert"]}]"#, "triggers[0].on: \"upsert\""),
            (#"[{\#(base),"on":[]}]"#, "triggers[0].on must be"),
            (#"[{"name":"a","path":"/m","url":"http://h/x"}]"#, "exactly one of secretFile and secretEnv"),
            (#"[{\#(base),"secretFile":"hook.secret"}]"#, "exactly one of secretFile and secretEnv"),
            (#"[{"name":"a","path":"/m","url":"http://h/x","secretEnv":"UNSET"}]"#, "UNSET is not set"),
            (#"[{"name":"a","path":"/m","url":"http://h/x","secretEnv":"SHORT"}]"#, "at least 32 bytes"),
            (#"[{"name":"a","path":"/m","url":"http://h/x","secretFile":"missing"}]"#, "secretFile"),
            (#"[{\#(base),"timeoutMs":0}]"#, "triggers[0].timeoutMs must be"),
            (#"[{\#(base),"maxConcurrency":"many"}]"#, "triggers[0].maxConcurrency must be"),
            (#"[{\#(base),"maxAgeSeconds":-1}]"#, "triggers[0].maxAgeSeconds must be"),
            (#"[{\#(base),"headers":{"Hearth-Signature":"x"}}]"#, "triggers[0].headers: \"Hearth-Signature\""),
            (#"[{\#(base),"headers":{"X":"a\nb"}}]"#, "triggers[0].headers.X"),
            (#"[{\#(base),"headers":["X"]}]"#, "triggers[0].headers must be"),
            (#"[{\#(base),"caFile":""}]"#, "triggers[0].caFile"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try parse(text, environment: environment), text) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains(expected), "\(text): \(message)")
                XCTAssertFalse(message.contains("s3cr3t"), message)
            }
        }
    }

    func testPerDatabaseTriggerErrorsNameTheDatabase() throws {
        var configuration = ServerConfiguration()
        XCTAssertThrowsError(
            try configuration.apply(
                file: try JSONParser.parse(Array(#"{"databases":{"shop":{"triggers":[{"name":"a"}]}}}"#.utf8)),
                source: "hearth.json")
        ) { error in
            XCTAssertTrue("\(error)".contains("hearth.json: databases.shop: triggers[0]"), "\(error)")
        }
    }
}
