import Foundation
import HearthCore
import HearthJSON
import XCTest

@testable import HearthServer

/// The triggers' admin requests against a real server with rules: over the line protocol on the
/// connection's database and over REST on the request's, for the server's admins only.
final class TriggerAdminServerTests: XCTestCase {
    private let adminSecret = "server-admin-secret-0123456789"
    private let databaseSecret = "shop-db-secret-0123456789"
    private let hookSecret = String(repeating: "0123456789abcdef", count: 3)

    private func triggerObject(_ name: String) -> String {
        #"{"name":"\#(name)","path":"/messages/{id}","on":["create","update"],"url":"http://127.0.0.1:9/hook","secret":"\#(hookSecret)"}"#
    }

    /// A server with the admin secret, database `shop` (with its own admin secret) created, and
    /// `rules`.
    private func withShopServer(rules: String, _ body: (HearthServer) async throws -> Void) async throws {
        var shop = DatabaseSettings.PerDatabase()
        shop.adminSecrets = [databaseSecret]
        let configure: (inout ServerConfiguration) -> Void = {
            $0.rulesFile = rules
            $0.tokens.adminSecrets = [self.adminSecret]
            $0.databases.perDatabase["shop"] = shop
        }
        try await withLiveServer(configure: configure) { server in
            let setup = try TestClient(port: server.port)
            XCTAssertEqual(try setup.request(#"{"op":"auth","id":1,"token":"\#(adminSecret)"}"#)["ok"], .bool(true))
            XCTAssertEqual(try setup.request(#"{"op":"createDatabase","id":2,"db":"shop"}"#)["ok"], .bool(true))
            try await body(server)
        }
    }

    func testAnAdminManagesTheTriggersOfItsConnectionsDatabase() async throws {
        let rules = try temporaryFile(#"{"rules":{".read":false,".write":false}}"#)
        try await withShopServer(rules: rules) { server in

            let admin = try TestClient(port: server.port)
            XCTAssertEqual(try admin.request(#"{"op":"use","id":1,"db":"shop"}"#)["ok"], .bool(true))
            XCTAssertEqual(try admin.request(#"{"op":"auth","id":2,"token":"\#(adminSecret)"}"#)["ok"], .bool(true))
            XCTAssertEqual(try admin.request(#"{"op":"triggers","id":3}"#)["triggers"], .array([]))

            try admin.send(#"{"op":"addTrigger","id":4,"trigger":\#(triggerObject("notify"))}"#)
            let line = try admin.readLine()
            XCTAssertFalse(line.contains(hookSecret), "no answer carries the secret")
            let added = json(line)
            XCTAssertEqual(added["id"], .int(4))
            XCTAssertEqual(added["ok"], .bool(true), line)
            XCTAssertEqual(added["trigger"]?["name"], "notify")
            XCTAssertEqual(added["trigger"]?["path"], "/messages/{id}")
            XCTAssertEqual(added["trigger"]?["on"], .array(["create", "update"]))
            XCTAssertEqual(added["trigger"]?["source"], "api")

            let list = try admin.request(#"{"op":"triggers","id":5}"#)
            guard case .array(let triggers)? = list["triggers"] else { return XCTFail("\(list)") }
            XCTAssertEqual(triggers.map { $0["name"] }, ["notify"])
            XCTAssertNotNil(triggers.first?["state"])
            XCTAssertFalse(list.jsonString.contains(hookSecret))

            let again = try admin.request(#"{"op":"addTrigger","id":6,"trigger":\#(triggerObject("notify"))}"#)
            XCTAssertEqual(again["error"]?["code"], "bad_request")
            let bad = try admin.request(#"{"op":"addTrigger","id":7,"trigger":{"name":"x","path":"nope"}}"#)
            XCTAssertEqual(bad["error"]?["code"], "bad_request")
            XCTAssertTrue(bad["error"]?["message"]?.stringValue?.contains("trigger.") ?? false, "\(bad)")

            XCTAssertEqual(
                try admin.request(#"{"op":"deadLetters","id":8,"name":"notify"}"#)["deadLetters"], .array([]))
            XCTAssertEqual(try admin.request(#"{"op":"replayTrigger","id":9,"name":"notify"}"#)["replayed"], .int(0))
            XCTAssertEqual(
                try admin.request(#"{"op":"deadLetters","id":10,"name":"nosuch"}"#)["error"]?["code"], "not_found")

            // The default database has triggers of its own.
            let onDefault = try TestClient(port: server.port)
            XCTAssertEqual(
                try onDefault.request(#"{"op":"auth","id":1,"token":"\#(adminSecret)"}"#)["ok"], .bool(true))
            XCTAssertEqual(try onDefault.request(#"{"op":"triggers","id":2}"#)["triggers"], .array([]))

            XCTAssertEqual(try admin.request(#"{"op":"removeTrigger","id":11,"name":"notify"}"#)["ok"], .bool(true))
            XCTAssertEqual(try admin.request(#"{"op":"triggers","id":12}"#)["triggers"], .array([]))
            XCTAssertEqual(
                try admin.request(#"{"op":"removeTrigger","id":13,"name":"notify"}"#)["error"]?["code"], "not_found")
            // Requests after a trigger request are answered in order.
            try admin.send(#"{"op":"triggers","id":14}"#)
            try admin.send(#"{"op":"ping","id":15}"#)
            XCTAssertEqual(try admin.readResponse()["id"], .int(14))
            XCTAssertEqual(try admin.readResponse()["id"], .int(15))
        }
    }

    func testNobodyButAServerAdminIsServed() async throws {
        let rules = try temporaryFile(#"{"rules":{".read":true,".write":true}}"#)
        try await withShopServer(rules: rules) { server in
            let requests = [
                #"{"op":"triggers","id":1}"#, #"{"op":"addTrigger","id":1,"trigger":\#(triggerObject("x"))}"#,
                #"{"op":"removeTrigger","id":1,"name":"x"}"#, #"{"op":"deadLetters","id":1,"name":"x"}"#,
                #"{"op":"replayTrigger","id":1,"name":"x"}"#,
            ]
            // Anyone, and the database's own admin secret: refused.
            let anyone = try TestClient(port: server.port)
            XCTAssertEqual(try anyone.request(#"{"op":"use","id":0,"db":"shop"}"#)["ok"], .bool(true))
            let owner = try TestClient(port: server.port)
            XCTAssertEqual(try owner.request(#"{"op":"use","id":0,"db":"shop"}"#)["ok"], .bool(true))
            XCTAssertEqual(try owner.request(#"{"op":"auth","id":0,"token":"\#(databaseSecret)"}"#)["ok"], .bool(true))
            for client in [anyone, owner] {
                for request in requests {
                    XCTAssertEqual(try client.request(request)["error"]?["code"], "permission_denied", request)
                }
            }
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            let calls: [(String, String, String?)] = [
                ("GET", "/.well-known/hearth/triggers?ns=shop", nil),
                ("POST", "/.well-known/hearth/triggers?ns=shop", triggerObject("x")),
                ("DELETE", "/.well-known/hearth/triggers/x?ns=shop", nil),
                ("GET", "/.well-known/hearth/triggers/x/dead-letters?ns=shop", nil),
                ("POST", "/.well-known/hearth/triggers/x/replay?ns=shop", nil),
            ]
            for (method, target, body) in calls {
                XCTAssertEqual(try http.request(method, target, body: body).status, 401, "\(method) \(target)")
                XCTAssertEqual(
                    try http.request(method, target + "&auth=\(databaseSecret)", body: body).status, 401,
                    "\(method) \(target) as the database's admin")
            }
            // Nothing was added.
            let admin = try TestClient(port: server.port)
            XCTAssertEqual(try admin.request(#"{"op":"auth","id":1,"token":"\#(adminSecret)"}"#)["ok"], .bool(true))
            XCTAssertEqual(try admin.request(#"{"op":"triggers","id":3}"#)["triggers"], .array([]))
        }
    }

    func testTheRESTEndpointsActOnTheRequestsDatabase() async throws {
        let rules = try temporaryFile(#"{"rules":{".read":false,".write":false}}"#)
        let configure: (inout ServerConfiguration) -> Void = {
            $0.rulesFile = rules
            $0.tokens.adminSecrets = [self.adminSecret]
        }
        try await withLiveServer(configure: configure) { server in
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            let auth = [("Authorization", "Bearer \(adminSecret)")]
            XCTAssertEqual(try http.request("PUT", "/.well-known/hearth/databases/shop", headers: auth).status, 201)

            let created = try http.request(
                "POST", "/.well-known/hearth/triggers?ns=shop", body: triggerObject("notify"), headers: auth)
            XCTAssertEqual(created.status, 201, created.text)
            XCTAssertFalse(created.text.contains(hookSecret))
            let trigger = created.json
            XCTAssertEqual(trigger["name"], "notify")
            XCTAssertEqual(trigger["source"], "api")

            var response = try http.request("GET", "/.well-known/hearth/triggers?ns=shop", headers: auth)
            XCTAssertEqual(response.status, 200)
            guard case .array(let listed)? = response.json["triggers"] else { return XCTFail(response.text) }
            XCTAssertEqual(listed.map { $0["name"] }, ["notify"])
            response = try http.request("GET", "/.well-known/hearth/triggers", headers: auth)
            XCTAssertEqual(response.json, .object(["triggers": .array([])]))

            response = try http.request(
                "GET", "/.well-known/hearth/triggers/notify/dead-letters?ns=shop&limit=10", headers: auth)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json, .object(["deadLetters": .array([])]))
            response = try http.request(
                "POST", "/.well-known/hearth/triggers/notify/replay?ns=shop", body: #"{"ids":["a"]}"#, headers: auth)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json, .object(["replayed": .int(0)]))

            response = try http.request(
                "POST", "/.well-known/hearth/triggers?ns=shop", body: triggerObject("notify"), headers: auth)
            XCTAssertEqual(response.status, 400)
            response = try http.request("DELETE", "/.well-known/hearth/triggers/notify?ns=shop", headers: auth)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json, .object(["removed": "notify"]))
            response = try http.request("DELETE", "/.well-known/hearth/triggers/notify?ns=shop", headers: auth)
            XCTAssertEqual(response.status, 404)
            response = try http.request("GET", "/.well-known/hearth/triggers?ns=nosuch", headers: auth)
            XCTAssertEqual(response.status, 404)
        }
    }

    /// A delivery that keeps failing becomes a dead letter, listed over both transports and
    /// replayed over REST once the receiver answers; the inline secret is what signs it.
    func testADeadLetterIsListedAndReplayed() async throws {
        let receiver = try await LoopbackReceiver.start()
        defer { receiver.stop() }
        receiver.set(status: 503, body: [])
        let rules = try temporaryFile(#"{"rules":{".read":false,".write":false}}"#)
        let configure: (inout ServerConfiguration) -> Void = {
            $0.rulesFile = rules
            $0.tokens.adminSecrets = [self.adminSecret]
        }
        try await withLiveServer(configure: configure) { server in
            let admin = try TestClient(port: server.port)
            XCTAssertEqual(try admin.request(#"{"op":"auth","id":1,"token":"\#(adminSecret)"}"#)["ok"], .bool(true))
            let trigger =
                #"{"name":"notify","path":"/messages/{id}","on":["create"],"url":"http://127.0.0.1:\#(receiver.port)/hook","secret":"\#(hookSecret)","maxAgeSeconds":1,"timeoutMs":2000}"#
            XCTAssertEqual(
                try admin.request(#"{"op":"addTrigger","id":2,"trigger":\#(trigger)}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try admin.request(#"{"op":"set","id":3,"path":"/messages/m1","value":{"text":"hi"}}"#)["ok"],
                .bool(true))

            var letters: [JSONValue] = []
            let deadline = Date().addingTimeInterval(15)
            while letters.isEmpty, Date() < deadline {
                try await Task.sleep(nanoseconds: 100_000_000)
                if case .array(let list)? = try admin.request(#"{"op":"deadLetters","id":4,"name":"notify"}"#)[
                    "deadLetters"]
                {
                    letters = list
                }
            }
            XCTAssertEqual(letters.count, 1)
            let id = try XCTUnwrap(letters.first?["id"]?.stringValue)
            XCTAssertEqual(letters.first?["path"], "/messages/m1")
            XCTAssertEqual(letters.first?["kind"], "create")
            XCTAssertNotNil(letters.first?["lastError"]?.stringValue)
            let status = try admin.request(#"{"op":"triggers","id":5}"#)["triggers"]?.arrayValue?.first
            XCTAssertEqual(status?["deadLetters"], .int(1), "\(String(describing: status))")
            XCTAssertGreaterThanOrEqual(status?["failed"]?.int64Value ?? 0, 1)

            receiver.set(status: 200, body: [])
            let attempts = receiver.requests.count
            let http = try HTTPTestClient(port: try XCTUnwrap(server.httpPort))
            let auth = [("Authorization", "Bearer \(adminSecret)")]
            var response = try http.request("GET", "/.well-known/hearth/triggers/notify/dead-letters", headers: auth)
            XCTAssertEqual(response.json["deadLetters"]?.arrayValue?.count, 1, response.text)
            response = try http.request(
                "POST", "/.well-known/hearth/triggers/notify/replay", body: #"{"ids":["\#(id)"]}"#, headers: auth)
            XCTAssertEqual(response.json, .object(["replayed": .int(1)]), response.text)

            let delivered = try await TriggerRunnerTests.waitForRequests(receiver, count: attempts + 1)
            let last = try XCTUnwrap(delivered.last)
            XCTAssertEqual(last.headers.first(name: TriggerSignature.eventIdHeaderName), id)
            let signature = try XCTUnwrap(last.headers.first(name: TriggerSignature.headerName))
            XCTAssertTrue(
                signatureVerifies(
                    header: signature, body: last.body, secret: Array(hookSecret.utf8),
                    now: Int64(Date().timeIntervalSince1970), tolerance: 300))
            var remaining = 1
            let emptied = Date().addingTimeInterval(10)
            while remaining > 0, Date() < emptied {
                try await Task.sleep(nanoseconds: 50_000_000)
                response = try http.request("GET", "/.well-known/hearth/triggers/notify/dead-letters", headers: auth)
                remaining = response.json["deadLetters"]?.arrayValue?.count ?? -1
            }
            XCTAssertEqual(remaining, 0, "a replayed dead letter that was delivered leaves the list")
        }
    }
}

extension JSONValue {
    /// The items of an array, nil for any other value.
    fileprivate var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
