import Foundation
import HearthCore
import HearthJSON
import HearthServer
import XCTest

/// The subscription lifecycle and delivery guarantees of docs/PROTOCOL.md, "Events".
final class SubscriptionTests: XCTestCase {
    func testDefaultSubscriptionSendsValueEventsOnly() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let sub = try c.request(#"{"op":"subscribe","id":1,"path":"/room"}"#)
            XCTAssertEqual(sub["sub"], .int(1))
            XCTAssertEqual(sub["rev"], .int(0))
            XCTAssertEqual(try c.readJSON(), json(#"{"sub":1,"event":"value","rev":0,"value":null}"#))
            let set = try c.request(#"{"op":"set","id":2,"path":"/room/a","value":{"t":"hi"}}"#)
            XCTAssertEqual(set["rev"], .int(1))
            // The event came before the write's response.
            XCTAssertEqual(c.events, [json(#"{"sub":1,"event":"value","rev":1,"value":{"a":{"t":"hi"}}}"#)])
        }
    }

    func testEventsReachOtherConnectionsWithRevAndPrev() async throws {
        try await withLiveServer { server in
            let listener = try TestClient(port: server.port)
            let writer = try TestClient(port: server.port)
            try listener.request(
                #"{"op":"subscribe","path":"/list","events":["child_added","child_removed","child_changed"]}"#)
            try writer.request(#"{"op":"set","path":"/list/b","value":2}"#)
            try writer.request(#"{"op":"set","path":"/list/a","value":1}"#)
            try writer.request(#"{"op":"set","path":"/list/b","value":3}"#)
            try writer.request(#"{"op":"remove","path":"/list/a"}"#)
            XCTAssertEqual(
                try listener.readJSON(),
                json(#"{"sub":1,"event":"child_added","rev":1,"key":"b","value":2,"prev":null}"#))
            XCTAssertEqual(
                try listener.readJSON(),
                json(#"{"sub":1,"event":"child_added","rev":2,"key":"a","value":1,"prev":null}"#))
            XCTAssertEqual(
                try listener.readJSON(),
                json(#"{"sub":1,"event":"child_changed","rev":3,"key":"b","value":3,"prev":"a"}"#))
            XCTAssertEqual(
                try listener.readJSON(), json(#"{"sub":1,"event":"child_removed","rev":4,"key":"a","value":1}"#))
        }
    }

    func testDeeperViewsFirstAndNothingForUnrelatedWrites() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"subscribe","path":"/o"}"#)
            _ = try c.readJSON()
            try c.request(#"{"op":"subscribe","path":"/o/a/b"}"#)
            _ = try c.readJSON()
            try c.request(#"{"op":"subscribe","path":"/o/a","events":["child_changed","child_added","value"]}"#)
            _ = try c.readJSON()
            c.events = []
            try c.request(#"{"op":"set","path":"/o/a/b","value":1}"#)
            XCTAssertEqual(c.events.map { $0["sub"] }, [.int(2), .int(3), .int(3), .int(1)])
            XCTAssertEqual(
                c.events.map { $0["event"] }, ["value", "child_added", "value", "value"].map(JSONValue.string))
            c.events = []
            try c.request(#"{"op":"set","path":"/elsewhere","value":1}"#)
            try c.request(#"{"op":"set","path":"/o/a/b","value":1}"#)
            XCTAssertEqual(c.events, [], "no events for an unrelated or identical write")
        }
    }

    func testLimitedWindowOutsideWritesRaiseNothing() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/s","value":{"a":1,"b":2,"c":3,"d":4}}"#)
            try c.request(
                #"{"op":"subscribe","path":"/s","query":{"orderBy":"$value","limitToLast":2},"events":["child_added","child_removed","value"]}"#
            )
            XCTAssertEqual(try c.readJSON()["key"], .string("c"))
            XCTAssertEqual(try c.readJSON()["key"], .string("d"))
            XCTAssertEqual(try c.readJSON()["value"]?.objectMembers?.map(\.key), ["c", "d"])
            c.events = []
            try c.request(#"{"op":"set","path":"/s/a","value":0}"#)
            XCTAssertEqual(c.events, [])
            try c.request(#"{"op":"set","path":"/s/e","value":10}"#)
            XCTAssertEqual(
                c.events.map { $0["event"] }, ["child_removed", "child_added", "value"].map(JSONValue.string))
            XCTAssertEqual(c.events.map { $0["key"] }, [.string("c"), .string("e"), nil])
        }
    }

    func testUnsubscribeAndUnknownSubscription() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"subscribe","path":"/x"}"#)
            _ = try c.readJSON()
            XCTAssertEqual(try c.request(#"{"op":"unsubscribe","sub":1}"#)["ok"], .bool(true))
            XCTAssertEqual(try c.request(#"{"op":"unsubscribe","sub":1}"#).errorCode, "not_found")
            XCTAssertEqual(try c.request(#"{"op":"unsubscribe","sub":"one"}"#).errorCode, "bad_request")
            c.events = []
            try c.request(#"{"op":"set","path":"/x","value":1}"#)
            XCTAssertEqual(c.events, [])
            XCTAssertEqual(try c.request(#"{"op":"subscribe","path":"/x","events":["nope"]}"#).errorCode, "bad_request")
            XCTAssertEqual(try c.request(#"{"op":"subscribe","path":"/x","events":[]}"#).errorCode, "bad_request")
        }
    }

    func testUndeclaredIndexWarnsAndStrictModeRejects() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let get = try c.request(#"{"op":"get","path":"/d","query":{"orderBy":"height"}}"#)
            XCTAssertEqual(get["warning"], .string(#"index_not_defined: add ".indexOn": "height" at /d to the rules"#))
            let sub = try c.request(#"{"op":"subscribe","path":"/d","query":{"orderBy":"$value"}}"#)
            XCTAssertEqual(sub["warning"], .string(#"index_not_defined: add ".indexOn": ".value" at /d to the rules"#))
            XCTAssertNil(try c.request(#"{"op":"get","path":"/d","query":{"orderBy":"$key"}}"#)["warning"])
        }
        try await withLiveServer(setting: \.strictIndexes, to: true) { server in
            let c = try TestClient(port: server.port)
            XCTAssertEqual(
                try c.request(#"{"op":"get","path":"/d","query":{"orderBy":"height"}}"#).errorCode, "index_not_defined")
        }
    }

    func testDeclaredIndexesIncludingWildcardsNeedNoWarning() async throws {
        let rulesFile = try temporaryFile(
            #"{"rules":{".read":true,".write":true,"d":{".indexOn":["height"]},"users":{"$uid":{"posts":{".indexOn":".value"}}}}}"#
        )
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.httpPort = 0
        configuration.strictIndexes = true
        configuration.rulesFile = rulesFile
        configuration.dataDirectory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        defer { Task { await server.shutdown() } }
        let c = try TestClient(port: server.port)
        try c.request(#"{"op":"set","path":"/d","value":{"x":{"height":3},"y":{"height":1}}}"#)
        let get = try c.request(#"{"op":"get","path":"/d","query":{"orderBy":"height","limitToFirst":1}}"#)
        XCTAssertNil(get["warning"])
        XCTAssertEqual(get["value"], json(#"{"y":{"height":1}}"#))
        // The index is maintained by later writes.
        try c.request(#"{"op":"set","path":"/d/z","value":{"height":0}}"#)
        XCTAssertEqual(
            try c.request(#"{"op":"get","path":"/d","query":{"orderBy":"height","limitToFirst":1}}"#)["value"],
            json(#"{"z":{"height":0}}"#))
        XCTAssertEqual(
            try c.request(#"{"op":"get","path":"/users/ada/posts","query":{"orderBy":"$value"}}"#)["ok"], .bool(true))
        XCTAssertEqual(
            try c.request(#"{"op":"get","path":"/users/ada","query":{"orderBy":"$value"}}"#).errorCode,
            "index_not_defined")
        await server.shutdown()
    }

    /// Subscribers come and go while a writer counts; every subscription sees the counter
    /// without gaps or repeats from its first value on.
    func testChurningSubscribersLoseAndRepeatNothing() async throws {
        try await withLiveServer { server in
            let port = server.port
            let writes = 2000
            let done = FlagBox()
            try concurrently(6) { worker in
                if worker == 0 {
                    let writer = try TestClient(port: port)
                    for i in 1...writes { try writer.send(#"{"op":"set","path":"/counter","value":\#(i)}"#) }
                    for _ in 1...writes { _ = try writer.readResponse(timeout: 30) }
                    done.set()
                    return
                }
                let c = try TestClient(port: port)
                var rounds = 0
                while !done.isSet || rounds == 0 {
                    rounds += 1
                    try c.send(#"{"op":"subscribe","path":"/counter"}"#)
                    let response = try c.readResponse()
                    guard let sub = response["sub"] else { throw TestClient.Failure(description: response.jsonString) }
                    var last: Int64? = nil
                    var seen = 0
                    while seen < 50 {
                        let event = try c.readJSON(timeout: 10)
                        guard event["sub"] == sub, event["event"] == .string("value") else { continue }
                        let value = event["value"]?.int64Value ?? 0
                        if let last, value != last + 1 {
                            throw TestClient.Failure(description: "after \(last) came \(value)")
                        }
                        last = value
                        seen += 1
                        if value == Int64(writes) { break }
                    }
                    try c.send(#"{"op":"unsubscribe","sub":\#(sub.jsonString)}"#)
                    // Events of this subscription may still arrive before the answer.
                    while try c.readJSON()["ok"] == nil {}
                    if last == Int64(writes) { break }
                }
            }
        }
    }
}

final class FlagBox: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var flag = false
    func set() {
        lock.lock()
        flag = true
        lock.unlock()
    }
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return flag
    }
}
