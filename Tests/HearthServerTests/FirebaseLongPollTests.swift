import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Firebase's long-polling transport `/.lp` and its upgrade to a WebSocket (docs/firebase-sdk.md,
/// "Long polling"), over real HTTP against a live server.
final class FirebaseLongPollTests: XCTestCase {
    /// `{"t":"d","d":{"r":N,"a":A,"b":B}}`.
    static func request(_ number: Int, _ action: String, _ body: String) -> String {
        #"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#
    }

    /// Whether `data` holds the answer to request `number`.
    static func answered(_ number: Int, in data: [JSONValue]) -> Bool {
        data.contains { $0["r"]?.int64Value == Int64(number) }
    }

    static func status(_ number: Int, in data: [JSONValue]) -> String? {
        for message in data where message["r"]?.int64Value == Int64(number) {
            if case .string(let status)? = message["b"]?["s"] { return status }
        }
        return nil
    }

    func testHandshakeSetListenAndPush() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            let start = try client.start()
            XCTAssertEqual(start.status, 200)
            XCTAssertEqual(start.header("Content-Type"), "application/javascript; charset=utf-8")
            XCTAssertTrue(start.text.contains("parent.pLPCommand42"), start.text)
            XCTAssertTrue(start.text.contains("parent.pRTLPCB42"), start.text)
            // The hello is packet 0.
            let hello = try XCTUnwrap(client.messages.first)
            XCTAssertEqual(hello["d"]?["t"], .string("h"))
            XCTAssertEqual(hello["d"]?["d"]?["v"], .string("5"))
            guard case .string(let session)? = hello["d"]?["d"]?["s"] else { return XCTFail("no session id") }
            XCTAssertFalse(session.isEmpty)
            XCTAssertFalse(client.id.isEmpty)
            XCTAssertFalse(client.password.isEmpty)

            try client.send([
                Self.request(1, "s", #"{"c":{"sdk.js.11-8-0":1}}"#),
                Self.request(2, "q", #"{"p":"/room","h":""}"#),
                Self.request(3, "p", #"{"p":"/room/a","d":1}"#),
            ])
            try client.receive { _ in Self.answered(3, in: client.data) }
            XCTAssertEqual(Self.status(1, in: client.data), "ok")
            XCTAssertEqual(Self.status(2, in: client.data), "ok")
            XCTAssertEqual(Self.status(3, in: client.data), "ok")
            // The write's push comes before its answer.
            let pushIndex = try XCTUnwrap(
                client.data.firstIndex { $0["a"] == .string("d") && $0["b"]?["p"] == .string("/room/a") })
            let answerIndex = try XCTUnwrap(client.data.firstIndex { $0["r"]?.int64Value == 3 })
            XCTAssertLessThan(pushIndex, answerIndex)

            // Another client's write reaches the held poll.
            let rest = try HTTPTestClient(port: port)
            XCTAssertEqual(try rest.request("PUT", "/room/b.json", body: #""hi""#).status, 200)
            try client.receive { data in
                client.data.contains { $0["b"]?["p"] == .string("/room/b") && $0["b"]?["d"] == .string("hi") }
            }
        }
    }

    func testSegmentsAreReassembledAcrossRequests() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            XCTAssertEqual(try client.start().status, 200)
            let long = String(repeating: "héllo wörld ", count: 600)
            let message = Self.request(1, "p", #"{"p":"/long","d":"\#(long)"}"#)
            var encoded = Data(message.utf8).base64EncodedString()
            encoded = encoded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: ".")
            var pieces: [String] = []
            var index = encoded.startIndex
            while index < encoded.endIndex {
                let end = encoded.index(index, offsetBy: 1_000, limitedBy: encoded.endIndex) ?? encoded.endIndex
                pieces.append(String(encoded[index..<end]))
                index = end
            }
            XCTAssertGreaterThan(pieces.count, 4)
            func query(_ range: Range<Int>) -> String {
                range.enumerated().map { slot, number in
                    "&seg\(slot)=\(number)&ts\(slot)=\(pieces.count)&d\(slot)=\(pieces[number])"
                }.joined()
            }
            // The later half first: the server waits for the rest.
            let half = pieces.count / 2
            try client.request(segments: query(half..<pieces.count))
            try client.request(segments: query(0..<half))
            client.nextSegment = pieces.count
            try client.receive { _ in Self.answered(1, in: client.data) }
            XCTAssertEqual(Self.status(1, in: client.data), "ok")
            let rest = try HTTPTestClient(port: port)
            XCTAssertEqual(try rest.request("GET", "/long.json").json, .string(long))
        }
    }

    func testDisconnectRunsOnDisconnectAndEndsTheSession() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            XCTAssertEqual(try client.start().status, 200)
            try client.send([Self.request(1, "o", #"{"p":"/presence","d":"gone"}"#)])
            try client.receive { _ in Self.answered(1, in: client.data) }
            let rest = try HTTPTestClient(port: port)
            XCTAssertEqual(try rest.request("GET", "/presence.json").json, .null)
            let frame = try rest.request("GET", "/.lp?dframe=t&id=\(client.id)&pw=\(client.password)")
            XCTAssertEqual(frame.status, 200)
            XCTAssertTrue(frame.text.contains("disconn=t"))
            XCTAssertEqual(try rest.request("GET", "/.lp?disconn=t&id=\(client.id)&pw=\(client.password)").status, 200)
            try await waitFor { try rest.request("GET", "/presence.json").json == .string("gone") }
            // The session is gone: its polls are refused.
            try await waitFor {
                try rest.request("GET", "/.lp?id=\(client.id)&pw=\(client.password)&ser=9").status == 404
            }
        }
    }

    func testExpiryRunsOnDisconnect() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            XCTAssertEqual(try client.start().status, 200)
            try client.send([Self.request(1, "o", #"{"p":"/presence","d":"expired"}"#)])
            try client.receive { _ in Self.answered(1, in: client.data) }
            // The client stops polling (the held poll is answered within 20 s, then nothing).
            let rest = try HTTPTestClient(port: port)
            XCTAssertEqual(try rest.request("GET", "/presence.json").json, .null)
            try await waitFor(timeout: 75) { try rest.request("GET", "/presence.json").json == .string("expired") }
        }
    }

    func testAClientThatDoesNotPollIsLetGo() async throws {
        try await withLiveServer(setting: \.maxOutboundBytes, to: 16_384) { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            XCTAssertEqual(try client.start().status, 200)
            try client.send([
                Self.request(1, "q", #"{"p":"/big","h":""}"#), Self.request(2, "o", #"{"p":"/state","d":"slow"}"#),
            ])
            try client.receive { _ in Self.answered(2, in: client.data) }
            // The held poll takes the first value; nobody polls for the next ones.
            let rest = try HTTPTestClient(port: port)
            let value = "\"" + String(repeating: "x", count: 12_000) + "\""
            for index in 0..<3 {
                XCTAssertEqual(try rest.request("PUT", "/big/\(index).json", body: value).status, 200)
            }
            try await waitFor { try rest.request("GET", "/state.json").json == .string("slow") }
        }
    }

    func testWrongIDOrPasswordIsRefused() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            XCTAssertEqual(try client.start().status, 200)
            let rest = try HTTPTestClient(port: port)
            XCTAssertEqual(try rest.request("GET", "/.lp?id=\(client.id)&pw=wrong&ser=3").status, 404)
            XCTAssertEqual(try rest.request("GET", "/.lp?id=nosuch&pw=\(client.password)&ser=3").status, 404)
            XCTAssertEqual(try rest.request("GET", "/.lp?ser=3").status, 404)
            XCTAssertEqual(try rest.request("GET", "/.lp?dframe=t&id=\(client.id)&pw=x").status, 404)
            XCTAssertEqual(try rest.request("GET", "/.lp?start=t&ser=1&cb=%3Cscript%3E&v=5").status, 400)
            // A WebSocket cannot join a session that does not exist.
            XCTAssertThrowsError(try WebSocketTestClient(port: port, target: "/.ws?v=5&s=nosuch"))
        }
    }

    func testSessionsFromOneAddressAreBounded() async throws {
        try await withLiveServer(setting: \.protection.maxConnectionsPerAddress, to: 4) { server in
            let port = try XCTUnwrap(server.httpPort)
            // One connection starts sessions one after another; each outlives its request.
            let rest = try HTTPTestClient(port: port)
            for serial in 1...4 {
                let started = try rest.request("GET", "/.lp?start=t&ser=\(serial)&cb=1&v=5")
                XCTAssertEqual(started.status, 200, started.text)
            }
            let refused = try rest.request("GET", "/.lp?start=t&ser=5&cb=1&v=5")
            XCTAssertEqual(refused.status, 503, refused.text)
            XCTAssertTrue(refused.error?.contains("maxConnectionsPerAddress") == true, refused.text)
        }
    }

    func testForeignPagesAreRefusedInOpenMode() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let refusals: [[(String, String)]] = [
                [("Origin", "https://evil.example")],
                [("Referer", "https://evil.example/page.html")],
                [("Sec-Fetch-Site", "cross-site")],
            ]
            for headers in refusals {
                let response = try LongPollTestClient(port: port).start(headers: headers)
                XCTAssertEqual(response.status, 403, "\(headers)")
            }
            let local = LongPollTestClient(port: port)
            XCTAssertEqual(try local.start(headers: [("Referer", "http://localhost:5000/app.html")]).status, 200)
            // Later requests are checked too.
            let rest = try HTTPTestClient(port: port)
            let foreign = try rest.request(
                "GET", "/.lp?id=\(local.id)&pw=\(local.password)&ser=5", headers: [("Origin", "https://evil.example")])
            XCTAssertEqual(foreign.status, 403)
        }
    }

    func testUpgradeToWebSocketKeepsOrder() async throws {
        try await withLiveServer { server in
            let port = try XCTUnwrap(server.httpPort)
            let client = LongPollTestClient(port: port)
            XCTAssertEqual(try client.start().status, 200)
            guard case .string(let session)? = client.messages.first?["d"]?["d"]?["s"] else {
                return XCTFail("no session id")
            }
            try client.send([
                Self.request(1, "q", #"{"p":"/u","h":""}"#), Self.request(2, "p", #"{"p":"/u/x","d":0}"#),
            ])
            try client.receive { _ in Self.answered(2, in: client.data) }

            let socket = try WebSocketTestClient(port: port, target: "/.ws?v=5&s=\(session)")
            // The server opens the exchange with the switch acknowledgement; pings get pongs.
            XCTAssertEqual(try socket.receiveJSON()?["d"]?["t"], .string("a"))
            try socket.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
            XCTAssertEqual(try socket.receiveJSON()?["d"]?["t"], .string("o"))
            try socket.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
            XCTAssertEqual(try socket.receiveJSON()?["d"]?["t"], .string("o"))
            // The client switches: `a` and a write on the WebSocket, and (arriving later) a
            // write and `n` by long polling, which were sent first.
            try socket.send(#"{"t":"c","d":{"t":"a","d":{}}}"#)
            try socket.send(Self.request(4, "p", #"{"p":"/u/x","d":2}"#))
            try await Task.sleep(nanoseconds: 300_000_000)
            try client.send([Self.request(3, "p", #"{"p":"/u/x","d":1}"#), #"{"t":"c","d":{"t":"n","d":{}}}"#])
            XCTAssertNotNil(client.closedAt, "long polling is closed after the switch")
            XCTAssertEqual(client.messages.last?["d"]?["t"], .string("n"))

            // Everything else comes over the WebSocket, in order.
            var data = client.data
            while !Self.answered(4, in: data) {
                guard let message = try socket.receiveJSON() else { return XCTFail("the WebSocket closed") }
                if case .string("d")? = message["t"], let payload = message["d"] { data.append(payload) }
            }
            let values = data.compactMap { message -> JSONValue? in
                guard message["a"] == .string("d"), message["b"]?["p"] == .string("/u/x") else { return nil }
                return message["b"]?["d"]
            }
            XCTAssertEqual(values, [.int(0), .int(1), .int(2)])
            let three = try XCTUnwrap(data.firstIndex { $0["r"]?.int64Value == 3 })
            let four = try XCTUnwrap(data.firstIndex { $0["r"]?.int64Value == 4 })
            XCTAssertLessThan(three, four)
            let rest = try HTTPTestClient(port: port)
            XCTAssertEqual(try rest.request("GET", "/u/x.json").text, "2")

            // The page's disconnect frame fires as long polling closes: the session stays.
            XCTAssertEqual(try rest.request("GET", "/.lp?disconn=t&id=\(client.id)&pw=\(client.password)").status, 200)
            try socket.send(Self.request(5, "g", #"{"p":"/u/x","q":{}}"#))
            var answered = false
            while !answered {
                guard let message = try socket.receiveJSON() else { return XCTFail("the WebSocket closed") }
                answered = message["d"]?["r"]?.int64Value == 5
            }
        }
    }

    /// Polls `condition` until it holds.
    func waitFor(timeout: Double = 10, _ condition: () throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { return XCTFail("condition not met within \(timeout) s") }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
    }
}
