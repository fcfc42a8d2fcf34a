import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Server-Sent Events streams (docs/REST.md, "Streaming (Server-Sent Events)") against the real
/// server over real sockets, with writes from both protocols.
final class HTTPStreamTests: XCTestCase {
    private func event(_ client: HTTPTestClient, line: UInt = #line) throws -> HTTPTestClient.Event {
        guard let event = try client.nextEvent() else {
            XCTFail("the stream ended", line: line)
            throw TestClient.Failure(description: "the stream ended")
        }
        return event
    }

    func testStreamShapesEachWriteAsItWasMade() async throws {
        try await withLiveServer { server in
            let writer = try HTTPTestClient(port: server.httpPort ?? 0)
            _ = try writer.request("PUT", "/rooms/lobby.json", body: #"{"members":{"ada":true},"topic":"fossils"}"#)
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            let head = try stream.openStream("/rooms/lobby.json")
            XCTAssertEqual(head.status, 200)
            XCTAssertEqual(head.header("Content-Type"), "text/event-stream; charset=utf-8")
            XCTAssertEqual(head.header("Cache-Control"), "no-cache")
            XCTAssertEqual(head.header("Access-Control-Allow-Origin"), "*")
            XCTAssertEqual(head.header("Transfer-Encoding"), "chunked")
            XCTAssertNotNil(head.header("X-Hearth-Rev"))
            var next = try event(stream)
            XCTAssertEqual(next.name, "put")
            XCTAssertEqual(next.json, json(#"{"path":"/","data":{"members":{"ada":true},"topic":"fossils"}}"#))

            // A set below the location over the line protocol.
            let tcp = try TestClient(port: server.port)
            _ = try tcp.request(#"{"id":1,"op":"set","path":"/rooms/lobby/members/bob","value":true}"#)
            next = try event(stream)
            XCTAssertEqual(next.name, "put")
            XCTAssertEqual(next.json, json(#"{"path":"/members/bob","data":true}"#))

            // An update over HTTP: one patch with the members as sent.
            _ = try writer.request("PATCH", "/rooms/lobby.json", body: #"{"topic":"bones","members/ada":null}"#)
            next = try event(stream)
            XCTAssertEqual(next.name, "patch")
            XCTAssertEqual(next.json, json(#"{"path":"/","data":{"topic":"bones","members/ada":null}}"#))

            // A write above the location: the location's new value at "/".
            _ = try tcp.request(#"{"id":2,"op":"update","path":"/rooms","values":{"lobby/topic":"eggs","hall":1}}"#)
            next = try event(stream)
            XCTAssertEqual(next.json, json(#"{"path":"/","data":{"members":{"bob":true},"topic":"eggs"}}"#))

            // Writes elsewhere and writes that change nothing raise nothing; a priority alone
            // changes nothing on a plain stream. The next event is the removal.
            _ = try tcp.request(#"{"id":3,"op":"set","path":"/rooms/hall","value":2}"#)
            _ = try tcp.request(#"{"id":4,"op":"set","path":"/rooms/lobby/topic","value":"eggs"}"#)
            _ = try tcp.request(#"{"id":5,"op":"setPriority","path":"/rooms/lobby/members","priority":3}"#)
            _ = try writer.request("DELETE", "/rooms/lobby/members.json")
            next = try event(stream)
            XCTAssertEqual(next.json, json(#"{"path":"/members","data":null}"#))
            // A transaction is a set.
            _ = try tcp.request(
                #"{"id":6,"op":"transaction","path":"/rooms/lobby/topic","value":"ink","expect":"eggs"}"#)
            XCTAssertEqual(try event(stream).json, json(#"{"path":"/topic","data":"ink"}"#))
        }
    }

    func testLineProtocolSubscriberSeesHTTPWrites() async throws {
        try await withLiveServer { server in
            let tcp = try TestClient(port: server.port)
            _ = try tcp.request(#"{"id":1,"op":"subscribe","path":"/feed","events":["child_added"]}"#)
            let post = try HTTPTestClient(port: server.httpPort ?? 0).request("POST", "/feed.json", body: #""hello""#)
            guard case .string(let name)? = post.json["name"] else { return XCTFail(post.text) }
            let added = try tcp.readJSON()
            XCTAssertEqual(added["event"], "child_added")
            XCTAssertEqual(added["key"], .string(name))
            XCTAssertEqual(added["value"], "hello")
            XCTAssertEqual(added["rev"]?.int64Value.map { "\($0)" }, post.header("X-Hearth-Rev"))
        }
    }

    func testQueryStreamTracksALiveLimitToLastWindow() async throws {
        try await withLiveServer { server in
            let writer = try HTTPTestClient(port: server.httpPort ?? 0)
            _ = try writer.request("PUT", "/scores.json", body: #"{"a":{"s":1},"b":{"s":5},"c":{"s":3}}"#)
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            let query = #"/scores.json?orderBy=%22s%22&limitToLast=2"#
            XCTAssertEqual(try stream.openStream(query).status, 200)
            var window = try event(stream).json["data"] ?? .null
            XCTAssertEqual(window, json(#"{"c":{"s":3},"b":{"s":5}}"#))

            func apply(_ event: HTTPTestClient.Event) {
                guard case .object(let members)? = event.json["data"] else {
                    window = event.json["data"] ?? .null
                    return
                }
                XCTAssertEqual(event.json["path"], "/")
                var current: [JSONMember] = []
                if case .object(let existing) = window { current = existing }
                if event.name == "put" { current = [] }
                for member in members {
                    current.removeAll { $0.key == member.key }
                    if member.value != .null { current.append(member) }
                }
                window = current.isEmpty ? .null : .object(current)
            }
            func check(_ line: UInt = #line) throws {
                apply(try event(stream))
                let expected = try writer.request("GET", query).json
                XCTAssertEqual(normalised(window), normalised(expected), line: line)
            }
            _ = try writer.request("PUT", "/scores/d.json", body: #"{"s":9}"#)  // d enters, c leaves
            try check()
            _ = try writer.request("PATCH", "/scores/b.json", body: #"{"s":0}"#)  // b leaves, c enters
            try check()
            _ = try writer.request("PUT", "/scores/c/note.json", body: #""x""#)  // c changes in place
            try check()
            _ = try writer.request("DELETE", "/scores/d.json")  // d leaves, a enters
            try check()
            _ = try writer.request("DELETE", "/scores.json")  // the window empties
            try check()
        }
    }

    func testKeepAliveAndCleanEndAtShutdown() async throws {
        try await withLiveServer(setting: \.sseKeepAliveSeconds, to: 1) { server in
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try stream.openStream("/quiet.json").status, 200)
            XCTAssertEqual(try stream.nextEvent()?.json, json(#"{"path":"/","data":null}"#))
            let keepAlive = try stream.nextEvent(timeout: 5)
            XCTAssertEqual(keepAlive, HTTPTestClient.Event(name: "keep-alive", data: "null"))
            await server.shutdown()
            // The stream ends with its last chunk, not a reset.
            XCTAssertNil(try stream.nextEvent(timeout: 5))
            XCTAssertTrue(stream.streamEnded)
        }
    }

    func testStreamErrorsAreOrdinaryJSONErrors() async throws {
        try await withLiveServer { server in
            let client = try HTTPTestClient(port: server.httpPort ?? 0)
            let bad = try client.openStream("/a.json?print=pretty")
            XCTAssertEqual(bad.status, 400)
            XCTAssertEqual(bad.header("Content-Type"), "application/json; charset=utf-8")
            let unordered = try HTTPTestClient(port: server.httpPort ?? 0).openStream("/a.json?limitToFirst=1")
            XCTAssertEqual(unordered.status, 400)
        }
    }

    func testSlowStreamReaderIsCutAndNothingElseSuffers() async throws {
        try await withLiveServer(setting: \.maxOutboundBytes, to: 256 * 1024) { server in
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try stream.openStream("/big.json").status, 200)
            // The stream's reader reads nothing while 12.8 MB of events pile up: more than the
            // sockets' buffers hold, so the server's own unsent output passes the bound.
            let writer = try TestClient(port: server.port)
            let value = String(repeating: "x", count: 64 * 1024)
            for i in 0..<200 {
                try writer.send(#"{"id":\#(i),"op":"set","path":"/big/k\#(i % 8)","value":"\#(value)i\#(i)"}"#)
            }
            for _ in 0..<200 { _ = try writer.readResponse(timeout: 30) }
            XCTAssertTrue(stream.waitForClose(timeout: 30), "the slow stream was not cut")
            let other = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try other.request("GET", "/big/k0.json").status, 200)
        }
    }

    func testAFirstEventLargerThanTheOutboundBoundReachesAReader() async throws {
        try await withLiveServer(setting: \.maxOutboundBytes, to: 256 * 1024) { server in
            let writer = try TestClient(port: server.port)
            let value = String(repeating: "v", count: 3 << 20)
            XCTAssertEqual(
                try writer.request(#"{"id":1,"op":"set","path":"/large","value":"\#(value)"}"#)["ok"], .bool(true))
            // Twelve times maxOutboundBytes in the stream's first event: a large value, not a
            // slow reader, so it is delivered whole and the stream goes on.
            let stream = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try stream.openStream("/large.json").status, 200)
            let first = try stream.nextEvent(timeout: 30)
            XCTAssertEqual(first?.name, "put")
            XCTAssertGreaterThan(first?.data.count ?? 0, 3 << 20)
            XCTAssertEqual(
                try writer.request(#"{"id":2,"op":"set","path":"/large","value":"small"}"#)["ok"], .bool(true))
            XCTAssertEqual(try stream.nextEvent(timeout: 10)?.name, "put")
        }
    }

    func testClosedStreamReleasesItsSubscription() async throws {
        try await withLiveServer { server in
            for _ in 0..<3 {
                let stream = try HTTPTestClient(port: server.httpPort ?? 0)
                XCTAssertEqual(try stream.openStream("/x.json").status, 200)
                _ = try stream.nextEvent()
                stream.close()
            }
            // A write after the readers left reaches no one and breaks nothing.
            let writer = try HTTPTestClient(port: server.httpPort ?? 0)
            XCTAssertEqual(try writer.request("PUT", "/x.json", body: "1").status, 200)
            XCTAssertEqual(try writer.request("GET", "/x.json").text, "1")
        }
    }
}

/// Objects with their members sorted by key, at every level (REST promises no order).
func normalised(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let members):
        return .object(members.sorted { $0.key < $1.key }.map { JSONMember($0.key, normalised($0.value)) })
    case .array(let elements):
        return .array(elements.map(normalised))
    default:
        return value
    }
}
