import HearthJSON
import HearthServer
import XCTest

/// Every op over a real socket against the real server.
final class OperationTests: XCTestCase {
    func testHelloLineComesFirst() async throws {
        try await withLiveServer { server in
            let client = try TestClient(port: server.port)
            XCTAssertEqual(client.hello["event"], .string("hello"))
            XCTAssertEqual(client.hello["protocol"], .int(1))
            XCTAssertEqual(client.hello["server"]?.stringValue?.hasPrefix("hearthd/"), true)
            XCTAssertNotNil(client.hello["serverTime"]?.int64Value)
            XCTAssertNotNil(client.hello["connection"]?.stringValue)
        }
    }

    func testSetGetUpdateRemove() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let set = try c.request(
                #"{"op":"set","id":1,"path":"/users/ada","value":{"name":"Ada","born":1815,"langs":["en","fr"]}}"#)
            XCTAssertEqual(set, json(#"{"id":1,"ok":true,"rev":1}"#))
            let get = try c.request(#"{"op":"get","id":"g","path":"users/ada"}"#)
            XCTAssertEqual(get["id"], .string("g"))
            XCTAssertEqual(get["value"], json(#"{"born":1815,"langs":{"0":"en","1":"fr"},"name":"Ada"}"#))
            XCTAssertEqual(get["rev"], .int(1))

            let update = try c.request(
                #"{"op":"update","id":2,"path":"/users","values":{"ada/born":1816,"bob/name":"Bob","ada/langs":null}}"#)
            XCTAssertEqual(update["rev"], .int(2))
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/users"}"#)["value"],
                json(#"{"ada":{"born":1816,"name":"Ada"},"bob":{"name":"Bob"}}"#))

            XCTAssertEqual(try c.request(#"{"op":"remove","path":"/users/ada"}"#)["rev"], .int(3))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/users/ada"}"#)["value"], .null)
            // Removing the last child removes the empty parent too.
            try c.request(#"{"op":"remove","path":"/users/bob/name"}"#)
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/"}"#)["value"], .null)
        }
    }

    func testGetOptionsShallowExportAndHash() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/a","value":{"x":{"y":1},"z":"s",".priority":5}}"#)
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/a","shallow":true}"#)["value"], json(#"{"x":true,"z":true}"#))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/a/z","shallow":true}"#)["value"], .string("s"))
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/","format":"export"}"#)["value"],
                json(#"{"a":{"x":{"y":1},"z":"s",".priority":5}}"#))
            try c.request(#"{"op":"set","path":"/h","value":{"a":1,"b":"x"}}"#)
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/h","hash":true}"#)["hash"], .string("jRI9dwRS9sb4SWm8uuoN7+xBk4g=")
            )
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/missing","hash":true}"#)["hash"], .string(""))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/.info/connected"}"#)["value"], .null)
        }
    }

    func testPushIdsAreChronologicalAndUnique() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            var keys: [String] = []
            for i in 0..<50 {
                let response = try c.request(#"{"op":"push","path":"/log","value":{"n":\#(i)}}"#)
                let key = try XCTUnwrap(response["key"]?.stringValue)
                XCTAssertEqual(key.utf8.count, 20)
                keys.append(key)
            }
            XCTAssertEqual(keys, keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            XCTAssertEqual(Set(keys).count, 50)
            let stored = try c.request(#"{"op":"get","path":"/log","shallow":true}"#)["value"]?.objectMembers
            XCTAssertEqual(stored?.map(\.key), keys)
        }
    }

    func testPrioritiesAndServerValues() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/p","value":"v","priority":"high"}"#)
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/p","format":"export"}"#)["value"],
                json(#"{".value":"v",".priority":"high"}"#))
            try c.request(#"{"op":"setPriority","path":"/p","priority":7}"#)
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/p","format":"export"}"#)["value"],
                json(#"{".value":"v",".priority":7}"#))
            try c.request(#"{"op":"setPriority","path":"/p","priority":null}"#)
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/p","format":"export"}"#)["value"], .string("v"))

            let before = try XCTUnwrap(try c.request(#"{"op":"ping"}"#)["serverTime"]?.int64Value)
            try c.request(#"{"op":"set","path":"/t","value":{"at":{".sv":"timestamp"}}}"#)
            let at = try XCTUnwrap(try c.request(#"{"op":"get","path":"/t/at"}"#)["value"]?.int64Value)
            XCTAssertGreaterThanOrEqual(at, before)

            try c.request(#"{"op":"update","path":"/","values":{"n":{".sv":{"increment":40}},"lit":5}}"#)
            try c.request(#"{"op":"update","path":"/","values":{"n":{".sv":{"increment":2}}}}"#)
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/n"}"#)["value"], .int(42))
            try c.request(#"{"op":"set","path":"/n","value":{".sv":{"increment":0.5}}}"#)
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/n"}"#)["value"], .double(42.5))
        }
    }

    func testTransactions() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/acct","value":{"balance":10,".priority":1}}"#)
            let stale = try c.request(
                #"{"op":"transaction","path":"/acct","value":{"balance":20},"expect":{"balance":9}}"#)
            XCTAssertEqual(stale["committed"], .bool(false))
            XCTAssertEqual(stale["value"], json(#"{"balance":10,".priority":1}"#))
            let hash = try XCTUnwrap(stale["hash"]?.stringValue)

            let committed = try c.request(
                #"{"op":"transaction","path":"/acct","value":{"balance":20},"expect":{"balance":10.0}}"#)
            XCTAssertEqual(committed["committed"], .bool(true))
            XCTAssertNotNil(committed["rev"])
            // The priority survives a transaction whose value has none.
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/acct","format":"export"}"#)["value"],
                json(#"{"balance":20,".priority":1}"#))

            let byOldHash = try c.request(#"{"op":"transaction","path":"/acct","value":null,"expectHash":"\#(hash)"}"#)
            XCTAssertEqual(byOldHash["committed"], .bool(false))
            let current = try XCTUnwrap(byOldHash["hash"]?.stringValue)
            let byHash = try c.request(#"{"op":"transaction","path":"/acct","value":null,"expectHash":"\#(current)"}"#)
            XCTAssertEqual(byHash["committed"], .bool(true))
            XCTAssertEqual(try c.request(#"{"op":"get","path":"/acct"}"#)["value"], .null)
            // On a missing node the expected value is null and the hash is "".
            XCTAssertEqual(
                try c.request(#"{"op":"transaction","path":"/new","value":1,"expectHash":""}"#)["committed"],
                .bool(true))
        }
    }

    func testOnDisconnectRunsWhenTheConnectionCloses() async throws {
        try await withLiveServer { server in
            let watcher = try TestClient(port: server.port)
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/presence/ada","value":"online"}"#)
            XCTAssertEqual(
                try c.request(#"{"op":"onDisconnect","action":"set","path":"/presence/ada","value":"offline"}"#)["ok"],
                .bool(true))
            try c.request(
                #"{"op":"onDisconnect","action":"update","path":"/last","values":{"seen":{".sv":"timestamp"},"by":"ada"}}"#
            )
            try c.request(#"{"op":"onDisconnect","action":"remove","path":"/sessions/ada"}"#)
            try c.request(#"{"op":"onDisconnect","action":"set","path":"/cancelled","value":1}"#)
            try c.request(#"{"op":"onDisconnect","action":"cancel","path":"/cancelled"}"#)
            try c.request(#"{"op":"set","path":"/sessions/ada","value":true}"#)
            XCTAssertEqual(try watcher.request(#"{"op":"get","path":"/presence/ada"}"#)["value"], .string("online"))
            c.close()
            try await waitUntil {
                try watcher.request(#"{"op":"get","path":"/presence/ada"}"#)["value"] == .string("offline")
            }
            let root = try watcher.request(#"{"op":"get","path":"/"}"#)["value"]
            XCTAssertEqual(root?["last"]?["by"], .string("ada"))
            XCTAssertNotNil(root?["last"]?["seen"]?.int64Value)
            XCTAssertNil(root?["sessions"])
            XCTAssertNil(root?["cancelled"])
        }
    }

    func testOnDisconnectAfterAbruptClose() async throws {
        try await withLiveServer { server in
            let watcher = try TestClient(port: server.port)
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"onDisconnect","action":"set","path":"/status","value":"gone"}"#)
            // Vanish in the middle of a line, with a TCP reset.
            try c.sendRaw(Array(#"{"op":"set","path":"/half"#.utf8))
            c.closeAbruptly()
            try await waitUntil {
                try watcher.request(#"{"op":"get","path":"/status"}"#)["value"] == .string("gone")
            }
            XCTAssertEqual(try watcher.request(#"{"op":"get","path":"/half"}"#)["value"], .null)
        }
    }

    func testOnDisconnectCancelCutsPartOfAnAncestorValue() async throws {
        try await withLiveServer { server in
            let watcher = try TestClient(port: server.port)
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"onDisconnect","action":"set","path":"/a","value":{"b":1,"c":2}}"#)
            try c.request(#"{"op":"onDisconnect","action":"cancel","path":"/a/b"}"#)
            c.close()
            try await waitUntil { try watcher.request(#"{"op":"get","path":"/a"}"#)["value"] == json(#"{"c":2}"#) }
        }
    }

    func testPing() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let pong = try c.request(#"{"op":"ping","id":"p1"}"#)
            XCTAssertEqual(pong["id"], .string("p1"))
            XCTAssertEqual(pong["ok"], .bool(true))
            XCTAssertNotNil(pong["serverTime"]?.int64Value)
        }
    }
}

/// Polls `condition` until it holds (at most `timeout` seconds).
func waitUntil(timeout: Double = 10, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if try condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    XCTFail("condition not met within \(timeout) s")
}
