import Foundation
import HearthJSON
import HearthStorage
import XCTest

@testable import HearthServer

/// Several databases in one daemon, over real sockets: each has its own data, revisions, events
/// and rules; names, quotas and unknown databases get clear errors that create nothing; deleting
/// moves data aside; an idle database closes and opens again with its data.
final class DatabasesTests: XCTestCase {
    /// Two databases and the default one: writes, events and revisions never cross.
    func testWritesEventsAndRevisionsNeverCrossDatabases() async throws {
        try await withLiveServer { server in
            let alpha = try TestClient(port: server.port)
            let beta = try TestClient(port: server.port)
            let plain = try TestClient(port: server.port)
            XCTAssertEqual(try alpha.request(#"{"op":"use","id":1,"db":"alpha"}"#)["db"], "alpha")
            XCTAssertEqual(try beta.request(#"{"op":"use","id":1,"db":"beta"}"#)["db"], "beta")
            let subscribed = try alpha.request(#"{"op":"subscribe","id":2,"path":"/","events":["value"]}"#)
            XCTAssertEqual(subscribed["ok"], .bool(true))
            _ = try alpha.readJSON()  // the initial value event
            XCTAssertEqual(try beta.request(#"{"op":"set","id":3,"path":"/owner","value":"beta"}"#)["rev"], .int(1))
            XCTAssertEqual(try beta.request(#"{"op":"set","id":4,"path":"/n","value":2}"#)["rev"], .int(2))
            XCTAssertEqual(try plain.request(#"{"op":"set","id":5,"path":"/owner","value":"default"}"#)["rev"], .int(1))
            XCTAssertEqual(try alpha.request(#"{"op":"set","id":6,"path":"/owner","value":"alpha"}"#)["rev"], .int(1))
            // Alpha's subscription saw its own write only.
            let event = alpha.events.isEmpty ? try alpha.readJSON() : alpha.events.removeFirst()
            XCTAssertEqual(event["value"], .object(["owner": "alpha"]), "\(event)")
            XCTAssertTrue(alpha.events.isEmpty, "\(alpha.events)")
            XCTAssertEqual(try alpha.request(#"{"op":"get","id":7,"path":"/"}"#)["value"], .object(["owner": "alpha"]))
            XCTAssertEqual(
                try beta.request(#"{"op":"get","id":7,"path":"/"}"#)["value"], .object(["n": .int(2), "owner": "beta"]))
            XCTAssertEqual(
                try plain.request(#"{"op":"get","id":7,"path":"/"}"#)["value"], .object(["owner": "default"]))
            // The in-process snapshot is the default database's.
            let (root, rev) = try await server.snapshot()
            XCTAssertEqual(rev, 1)
            XCTAssertEqual(root.jsonValue(), .object(["owner": "default"]))
            // Each database's files are its own folder's.
            let folders = try FileManager.default.contentsOfDirectory(
                atPath: server.configuration.dataDirectory + "/databases")
            XCTAssertEqual(Set(folders), ["alpha", "beta"])
        }
    }

    /// `use` comes first or not at all, and a connection keeps its database.
    func testUseIsTheFirstRequestOnly() async throws {
        try await withLiveServer { server in
            let client = try TestClient(port: server.port)
            XCTAssertEqual(try client.request(#"{"op":"ping","id":1}"#)["ok"], .bool(true))
            let late = try client.request(#"{"op":"use","id":2,"db":"alpha"}"#)
            XCTAssertEqual(late["error"]?["code"], "bad_request")
            XCTAssertTrue(late["error"]?["message"]?.stringValue?.contains("first request") ?? false, "\(late)")
            // Pipelined: the lines after `use` wait for it and go to its database.
            let piped = try TestClient(port: server.port)
            try piped.send(
                #"{"op":"use","id":1,"db":"gamma"}"# + "\n" + #"{"op":"set","id":2,"path":"/x","value":1}"# + "\n"
                    + #"{"op":"get","id":3,"path":"/"}"#)
            XCTAssertEqual(try piped.readResponse()["db"], "gamma")
            XCTAssertEqual(try piped.readResponse()["rev"], .int(1))
            XCTAssertEqual(try piped.readResponse()["value"], .object(["x": .int(1)]))
            XCTAssertEqual(try client.request(#"{"op":"get","id":3,"path":"/"}"#)["value"], .null)
        }
    }

    /// Bad names, unknown databases with auto-create off, and the limits: clear errors, and
    /// nothing is created.
    func testBadNamesUnknownDatabasesAndLimitsCreateNothing() async throws {
        let configure: (inout ServerConfiguration) -> Void = {
            $0.databases.autoCreate = false
            $0.databases.maxDatabases = 3
        }
        try await withLiveServer(configure: configure) { server in
            let directory = server.configuration.dataDirectory
            for bad in ["Shop", "a_b", "-a", "a-", "", String(repeating: "a", count: 64), "a.b", "../x"] {
                let client = try TestClient(port: server.port)
                let answer = try client.request(#"{"op":"use","id":1,"db":\#(JSONValue.string(bad).jsonString)}"#)
                XCTAssertEqual(answer["error"]?["code"], "bad_request", bad)
                XCTAssertTrue(
                    answer["error"]?["message"]?.stringValue?.contains("lowercase letters") ?? false, "\(answer)")
            }
            let client = try TestClient(port: server.port)
            let unknown = try client.request(#"{"op":"use","id":1,"db":"ghost"}"#)
            XCTAssertEqual(unknown["error"]?["code"], "not_found")
            XCTAssertTrue(unknown["error"]?["message"]?.stringValue?.contains("hearth db create ghost") ?? false)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/databases/ghost"))
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try http.request("GET", "/x.json?ns=ghost").status, 404)
            XCTAssertEqual(try http.request("GET", "/x.json?ns=Bad_Name").status, 400)
            XCTAssertEqual(try http.request("PUT", "/x.json?ns=ghost", body: "1").status, 404)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/databases/ghost"))
            // Created by an admin (open mode: anyone on loopback), then usable.
            let admin = try TestClient(port: server.port)
            XCTAssertEqual(try admin.request(#"{"op":"createDatabase","id":1,"db":"one"}"#)["ok"], .bool(true))
            let again = try admin.request(#"{"op":"createDatabase","id":2,"db":"one"}"#)
            XCTAssertEqual(again["error"]?["code"], "bad_request")
            XCTAssertTrue(again["error"]?["message"]?.stringValue?.contains("already exists") ?? false)
            XCTAssertEqual(try admin.request(#"{"op":"createDatabase","id":3,"db":"two"}"#)["ok"], .bool(true))
            // maxDatabases counts the default database: the fourth is refused.
            let full = try admin.request(#"{"op":"createDatabase","id":4,"db":"three"}"#)
            XCTAssertEqual(full["error"]?["code"], "overloaded", "\(full)")
            XCTAssertTrue(full["error"]?["message"]?.stringValue?.contains("maxDatabases") ?? false)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/databases/three"))
            let user = try TestClient(port: server.port)
            XCTAssertEqual(try user.request(#"{"op":"use","id":1,"db":"one"}"#)["db"], "one")
            let list = try admin.request(#"{"op":"listDatabases","id":5}"#)
            XCTAssertEqual(names(list["databases"]), ["default", "one", "two"])
            XCTAssertEqual(element(list["databases"], 1)?["connections"], .int(1))
        }
    }

    /// `maxBytes` refuses writes (not removes) once a database holds more; `maxConnections`
    /// refuses a connection too many. Other databases are not affected.
    func testQuotasAreEnforcedPerDatabase() async throws {
        var quota = DatabaseSettings.PerDatabase()
        quota.maxBytes = 4096
        quota.maxConnections = 2
        let configure: (inout ServerConfiguration) -> Void = { $0.databases.perDatabase["small"] = quota }
        try await withLiveServer(configure: configure) { server in
            let client = try TestClient(port: server.port)
            XCTAssertEqual(try client.request(#"{"op":"use","id":1,"db":"small"}"#)["db"], "small")
            let big = String(repeating: "x", count: 1000)
            var refused: JSONValue?
            var refusedKey = ""
            for i in 0..<20 {
                let answer = try client.request(#"{"op":"set","id":2,"path":"/k\#(i)","value":"\#(big)"}"#)
                if answer["ok"] == .bool(false) {
                    refused = answer
                    refusedKey = "k\(i)"
                    break
                }
            }
            // The refused write left nothing.
            XCTAssertEqual(try client.request(#"{"op":"get","id":9,"path":"/\#(refusedKey)"}"#)["value"], .null)
            // Over HTTP: 507.
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            let overQuota = try http.request("PUT", "/more.json?ns=small", body: #""\#(big)""#)
            XCTAssertEqual(overQuota.status, 507, overQuota.text)
            XCTAssertTrue(overQuota.error?.contains("maxBytes") ?? false, overQuota.text)
            // The HTTP connection counted as one of the database's connections until it closed.
            http.close()
            let admin = try TestClient(port: server.port)
            try await waitUntil {
                try admin.request(#"{"op":"databaseInfo","id":1,"db":"small"}"#)["database"]?["connections"] == .int(1)
            }
            XCTAssertEqual(refused?["error"]?["code"], "quota_exceeded", "\(String(describing: refused))")
            XCTAssertTrue(refused?["error"]?["message"]?.stringValue?.contains("4096") ?? false)
            XCTAssertEqual(try client.request(#"{"op":"remove","id":3,"path":"/k0"}"#)["ok"], .bool(true))
            // A second connection fits, a third does not.
            let second = try TestClient(port: server.port)
            XCTAssertEqual(try second.request(#"{"op":"use","id":1,"db":"small"}"#)["ok"], .bool(true))
            let third = try TestClient(port: server.port)
            let crowded = try third.request(#"{"op":"use","id":1,"db":"small"}"#)
            XCTAssertEqual(crowded["error"]?["code"], "overloaded")
            XCTAssertTrue(crowded["error"]?["message"]?.stringValue?.contains("maxConnections") ?? false)
            // Another database is not limited.
            let other = try TestClient(port: server.port)
            XCTAssertEqual(try other.request(#"{"op":"use","id":1,"db":"large"}"#)["ok"], .bool(true))
            for i in 0..<8 {
                XCTAssertEqual(
                    try other.request(#"{"op":"set","id":2,"path":"/k\#(i)","value":"\#(big)"}"#)["ok"], .bool(true))
            }
            // A connection that leaves makes room.
            second.close()
            try await waitUntil {
                let retry = try TestClient(port: server.port)
                return try retry.request(#"{"op":"use","id":1,"db":"small"}"#)["ok"] == .bool(true)
            }
        }
    }

    /// Deleting moves the folder into the trash (or purges it), closes the connections on the
    /// database, and the name can be made again, empty.
    func testDeleteMovesDataAsideAndTheNameCanBeRecreated() async throws {
        try await withLiveServer { server in
            let directory = server.configuration.dataDirectory
            let user = try TestClient(port: server.port)
            XCTAssertEqual(try user.request(#"{"op":"use","id":1,"db":"doomed"}"#)["ok"], .bool(true))
            XCTAssertEqual(try user.request(#"{"op":"set","id":2,"path":"/keep","value":"me"}"#)["ok"], .bool(true))
            let registered = try user.request(
                #"{"op":"onDisconnect","id":3,"action":"set","path":"/gone","value":true}"#)
            XCTAssertEqual(registered["ok"], .bool(true))
            let admin = try TestClient(port: server.port)
            let deleted = try admin.request(#"{"op":"deleteDatabase","id":1,"db":"doomed"}"#)
            XCTAssertEqual(deleted["deleted"], "doomed", "\(deleted)")
            let movedTo = try XCTUnwrap(deleted["movedTo"]?.stringValue)
            XCTAssertTrue(movedTo.hasPrefix(directory + "/trash/doomed-"), movedTo)
            XCTAssertTrue(FileManager.default.fileExists(atPath: movedTo + "/MANIFEST"))
            // What the trash holds is the database as its connections left it: the closed
            // connection's onDisconnect write ran before the engine stopped.
            let (storage, recovered) = try Storage.open(directory: movedTo, logger: quietLogger)
            try storage.close()
            XCTAssertEqual(
                recovered.root.jsonValue(), .object(["gone": .bool(true), "keep": "me"]),
                "\(recovered.root.jsonValue())")
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/databases/doomed"))
            // The user's connection was closed with the reason.
            let event = try user.readJSON()
            XCTAssertEqual(event["event"], "error")
            XCTAssertEqual(event["error"]?["code"], "not_found")
            XCTAssertTrue(user.waitForClose())
            // The name again: empty.
            XCTAssertEqual(try admin.request(#"{"op":"createDatabase","id":2,"db":"doomed"}"#)["ok"], .bool(true))
            let fresh = try TestClient(port: server.port)
            XCTAssertEqual(try fresh.request(#"{"op":"use","id":1,"db":"doomed"}"#)["ok"], .bool(true))
            XCTAssertEqual(try fresh.request(#"{"op":"get","id":2,"path":"/"}"#)["value"], .null)
            fresh.close()
            // Purged: nothing kept.
            let purged = try admin.request(#"{"op":"deleteDatabase","id":3,"db":"doomed","purge":true}"#)
            XCTAssertEqual(purged["purged"], .bool(true), "\(purged)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/databases/doomed"))
            let trash = try FileManager.default.contentsOfDirectory(atPath: directory + "/trash")
            XCTAssertEqual(trash.count, 1, "\(trash)")
            // A connection that deletes its own database gets the answer, then the event, then
            // the close.
            let own = try TestClient(port: server.port)
            XCTAssertEqual(try own.request(#"{"op":"use","id":1,"db":"mine"}"#)["ok"], .bool(true))
            let mine = try own.request(#"{"op":"deleteDatabase","id":2,"db":"mine"}"#)
            XCTAssertEqual(mine["deleted"], "mine", "\(mine)")
            XCTAssertNotNil(mine["movedTo"])
            XCTAssertEqual(try own.readJSON()["error"]?["code"], "not_found")
            XCTAssertTrue(own.waitForClose())
            // Over HTTP, a keep-alive connection that used a database deletes it and stays.
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try http.request("PUT", "/x.json?ns=kept", body: "1").status, 200)
            let gone = try http.request("DELETE", "/.well-known/hearth/databases/kept")
            XCTAssertEqual(gone.status, 200, gone.text)
            XCTAssertEqual(gone.json["deleted"], "kept")
            XCTAssertEqual(try http.request("GET", "/.well-known/hearth/databases/kept").status, 404)
            // The default database is the data directory: never deleted.
            let refused = try admin.request(#"{"op":"deleteDatabase","id":4,"db":"default"}"#)
            XCTAssertEqual(refused["error"]?["code"], "bad_request")
            let unknown = try admin.request(#"{"op":"deleteDatabase","id":5,"db":"never"}"#)
            XCTAssertEqual(unknown["error"]?["code"], "not_found")
        }
    }

    /// A database nobody uses closes after `idleDatabaseSeconds`, and the next use opens it with
    /// its data and revision.
    func testAnIdleDatabaseClosesAndReopensWithItsData() async throws {
        let configure: (inout ServerConfiguration) -> Void = { $0.databases.idleCloseSeconds = 1 }
        try await withLiveServer(configure: configure) { server in
            let client = try TestClient(port: server.port)
            XCTAssertEqual(try client.request(#"{"op":"use","id":1,"db":"sleepy"}"#)["ok"], .bool(true))
            XCTAssertEqual(try client.request(#"{"op":"set","id":2,"path":"/a","value":{"b":1}}"#)["rev"], .int(1))
            XCTAssertEqual(try client.request(#"{"op":"set","id":3,"path":"/c","value":2}"#)["rev"], .int(2))
            let admin = try TestClient(port: server.port)
            XCTAssertEqual(
                try admin.request(#"{"op":"databaseInfo","id":1,"db":"sleepy"}"#)["database"]?["open"], .bool(true))
            client.close()
            try await waitUntil(timeout: 10) {
                try admin.request(#"{"op":"databaseInfo","id":1,"db":"sleepy"}"#)["database"]?["open"] == .bool(false)
            }
            let again = try TestClient(port: server.port)
            XCTAssertEqual(try again.request(#"{"op":"use","id":1,"db":"sleepy"}"#)["ok"], .bool(true))
            let state = try again.request(#"{"op":"get","id":2,"path":"/"}"#)
            XCTAssertEqual(state["value"], .object(["a": .object(["b": .int(1)]), "c": .int(2)]))
            XCTAssertEqual(state["rev"], .int(2))
        }
    }

    /// REST addresses a database with `?ns=` or the host `<name>.localhost`; two names that
    /// disagree are refused.
    func testRESTAddressesDatabasesByNamespaceAndSubdomain() async throws {
        try await withLiveServer { server in
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try http.request("PUT", "/greeting.json?ns=shop", body: #""hello""#).status, 200)
            XCTAssertEqual(try http.request("GET", "/greeting.json", host: "shop.localhost").text, #""hello""#)
            XCTAssertEqual(try http.request("GET", "/greeting.json").text, "null")
            XCTAssertEqual(
                try http.request("PUT", "/greeting.json", body: #""hi""#, host: "blog.localhost:9080").status, 200)
            XCTAssertEqual(try http.request("GET", "/greeting.json?ns=blog").text, #""hi""#)
            XCTAssertEqual(try http.request("GET", "/greeting.json?ns=shop").text, #""hello""#)
            XCTAssertEqual(try http.request("GET", "/greeting.json?ns=blog", host: "shop.localhost").status, 400)
            // A stream on one database hears its writes only.
            let stream = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try stream.openStream("/.json?ns=shop").status, 200)
            XCTAssertEqual(try stream.nextEvent()?.json["data"], .object(["greeting": "hello"]))
            XCTAssertEqual(try http.request("PUT", "/other.json?ns=blog", body: "1").status, 200)
            XCTAssertEqual(try http.request("PUT", "/other.json?ns=shop", body: "2").status, 200)
            let event = try stream.nextEvent()
            XCTAssertEqual(event?.json["path"], "/other")
            XCTAssertEqual(event?.json["data"], .int(2))
            // The admin endpoints.
            let list = try http.request("GET", "/.well-known/hearth/databases")
            XCTAssertEqual(
                names(list.json["databases"]), ["default", "blog", "shop"])
            XCTAssertEqual(try http.request("PUT", "/.well-known/hearth/databases/fresh").status, 201)
            XCTAssertEqual(try http.request("GET", "/.well-known/hearth/databases/fresh").json["open"], .bool(false))
            let deleted = try http.request("DELETE", "/.well-known/hearth/databases/fresh?purge=true")
            XCTAssertEqual(deleted.json["purged"], .bool(true), deleted.text)
            XCTAssertEqual(try http.request("GET", "/.well-known/hearth/databases/fresh").status, 404)
            // The metrics show the other databases' samples, labelled.
            let metrics = try http.request("GET", "/.well-known/hearth/metrics").text
            XCTAssertTrue(metrics.contains(#"hearth_writes_total{db="shop"} "#), metrics)
            XCTAssertTrue(metrics.contains("\nhearth_writes_total "), metrics)
            XCTAssertEqual(metrics.components(separatedBy: "# TYPE hearth_writes_total").count, 2)
        }
    }

    /// Rules and admin secrets are per database: a database's own admin secret is admin there
    /// and nowhere else, and each database's rules decide for it alone.
    func testRulesAndAdminSecretsArePerDatabase() async throws {
        let closed = try temporaryFile(#"{"rules":{".read":false,".write":false}}"#)
        let publicRules = try temporaryFile(#"{"rules":{".read":true,".write":true}}"#)
        var publicSettings = DatabaseSettings.PerDatabase()
        publicSettings.rulesFile = publicRules
        var privateSettings = DatabaseSettings.PerDatabase()
        privateSettings.adminSecrets = ["private-db-secret-0123456789"]
        let configure: (inout ServerConfiguration) -> Void = {
            $0.rulesFile = closed
            $0.tokens.adminSecrets = ["server-admin-secret-0123456789"]
            $0.databases.perDatabase["public"] = publicSettings
            $0.databases.perDatabase["private"] = privateSettings
        }
        try await withLiveServer(configure: configure) { server in
            let admin = try TestClient(port: server.port)
            XCTAssertEqual(
                try admin.request(#"{"op":"auth","id":1,"token":"server-admin-secret-0123456789"}"#)["ok"], .bool(true))
            for name in ["public", "private", "other"] {
                XCTAssertEqual(try admin.request(#"{"op":"createDatabase","id":2,"db":"\#(name)"}"#)["ok"], .bool(true))
            }
            // The public database's own rules let anyone in; the others keep the server's.
            let anyone = try TestClient(port: server.port)
            XCTAssertEqual(try anyone.request(#"{"op":"use","id":1,"db":"public"}"#)["ok"], .bool(true))
            XCTAssertEqual(try anyone.request(#"{"op":"set","id":2,"path":"/x","value":1}"#)["ok"], .bool(true))
            let stranger = try TestClient(port: server.port)
            XCTAssertEqual(try stranger.request(#"{"op":"use","id":1,"db":"other"}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try stranger.request(#"{"op":"set","id":2,"path":"/x","value":1}"#)["error"]?["code"],
                "permission_denied")
            // The private database's secret: admin there...
            let owner = try TestClient(port: server.port)
            XCTAssertEqual(try owner.request(#"{"op":"use","id":1,"db":"private"}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try owner.request(#"{"op":"auth","id":2,"token":"private-db-secret-0123456789"}"#)["ok"], .bool(true))
            XCTAssertEqual(try owner.request(#"{"op":"set","id":3,"path":"/x","value":1}"#)["ok"], .bool(true))
            // ...but not a server admin: it cannot list or delete databases.
            XCTAssertEqual(
                try owner.request(#"{"op":"listDatabases","id":4}"#)["error"]?["code"], "permission_denied")
            // ...and nothing elsewhere.
            let elsewhere = try TestClient(port: server.port)
            XCTAssertEqual(try elsewhere.request(#"{"op":"use","id":1,"db":"other"}"#)["ok"], .bool(true))
            let refused = try elsewhere.request(#"{"op":"auth","id":2,"token":"private-db-secret-0123456789"}"#)
            XCTAssertEqual(refused["error"]?["code"], "invalid_token")
            let onDefault = try TestClient(port: server.port)
            XCTAssertEqual(
                try onDefault.request(#"{"op":"auth","id":1,"token":"private-db-secret-0123456789"}"#)["error"]?[
                    "code"],
                "invalid_token")
            // Over HTTP too, and the admin endpoints need the server's admin secret.
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            XCTAssertEqual(try http.request("GET", "/x.json?ns=private&auth=private-db-secret-0123456789").text, "1")
            XCTAssertEqual(try http.request("GET", "/x.json?ns=other&auth=private-db-secret-0123456789").status, 401)
            XCTAssertEqual(try http.request("GET", "/x.json?ns=public").text, "1")
            XCTAssertEqual(try http.request("GET", "/.well-known/hearth/databases").status, 401)
            XCTAssertEqual(
                try http.request("GET", "/.well-known/hearth/databases?auth=private-db-secret-0123456789").status, 401)
            XCTAssertEqual(
                try http.request("GET", "/.well-known/hearth/databases?auth=server-admin-secret-0123456789").status, 200
            )
        }
    }
}

extension DatabasesTests {
    /// Rules set at run time on one database are kept in its folder, hold for it alone, and are
    /// in force again after a restart.
    func testRulesSetOnOneDatabaseAreItsOwnAcrossARestart() async throws {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = nil
        configuration.dataDirectory = temporaryDataDirectory()
        configuration.fsync = .never
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        let rules = #"{"rules":{".read":true,"open":{".write":true}}}"#
        for run in 1...2 {
            let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
            do {
                let shop = try TestClient(port: server.port)
                XCTAssertEqual(try shop.request(#"{"op":"use","id":1,"db":"shop"}"#)["ok"], .bool(true))
                if run == 1 {
                    let set = try shop.request(#"{"op":"setRules","id":2,"rules":\#(rules)}"#)
                    XCTAssertEqual(set["ok"], .bool(true), "\(set)")
                }
                XCTAssertEqual(
                    try shop.request(#"{"op":"set","id":3,"path":"/closed","value":1}"#)["error"]?["code"],
                    "permission_denied", "run \(run)")
                XCTAssertEqual(try shop.request(#"{"op":"set","id":4,"path":"/open","value":1}"#)["ok"], .bool(true))
                // The default database has no rules: it takes the same write.
                let plain = try TestClient(port: server.port)
                XCTAssertEqual(
                    try plain.request(#"{"op":"set","id":1,"path":"/closed","value":1}"#)["ok"], .bool(true),
                    "run \(run)")
            } catch {
                await server.shutdown()
                throw error
            }
            await server.shutdown()
        }
        let directory = configuration.dataDirectory
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/databases/shop/rules.accepted.json"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/rules.accepted.json"))
    }
}

/// The `name`s of a list of databases.
private func names(_ list: JSONValue?) -> [String] {
    guard case .array(let items)? = list else { return [] }
    return items.compactMap { $0["name"]?.stringValue }
}

private func element(_ list: JSONValue?, _ index: Int) -> JSONValue? {
    guard case .array(let items)? = list, items.indices.contains(index) else { return nil }
    return items[index]
}
