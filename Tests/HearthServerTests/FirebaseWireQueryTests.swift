import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Tagged listens (queries with a start, end or limit) on the Firebase wire protocol: the
/// window before the ok, its updates as children enter and leave it, every push carrying the
/// query's tag, the index warning, the window's hash, unlisten by tag. The window a client ends up
/// with is compared with the same query over REST; the shape of the pushes is the server's choice.
final class FirebaseWireQueryTests: XCTestCase {
    private static let scores = #"{"a":{"s":1},"b":{"s":5},"c":{"s":3}}"#

    /// limitToLast(2) ordered by a child: the window follows every kind of write, as REST's
    /// answer to the same query does.
    func testLimitToLastWindowFollowsTheData() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/scores", Self.scores)
            let client = try await FirebaseWireClient(port: port)
            let writer = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.track(tag: 7, at: "/scores")
            let listen = try await client.request("q", #"{"p":"/scores","q":{"l":2,"vf":"r","i":"s"},"t":7,"h":""}"#)
            XCTAssertEqual(listen.response.status, "ok")
            XCTAssertEqual(listen.response.data, json(#"{"w":["no_index"]}"#))
            XCTAssertTrue(listen.pushesBefore.allSatisfy { $0.tag == 7 }, "\(listen.pushesBefore)")
            view.apply(listen.pushesBefore)
            XCTAssertEqual(normalised(view.window(7)), normalised(json(#"{"b":{"s":5},"c":{"s":3}}"#)))

            let query = #"orderBy=%22s%22&limitToLast=2"#
            let writes: [(String, String, String)] = [
                ("p", #"{"p":"/scores/d","d":{"s":9}}"#, "d enters, c leaves"),
                ("m", #"{"p":"/scores/b","d":{"s":0}}"#, "b leaves, c enters"),
                ("p", #"{"p":"/scores/c/note","d":"x"}"#, "c changes in place"),
                ("p", #"{"p":"/scores/e","d":{"s":-1}}"#, "e stays out"),
                ("p", #"{"p":"/scores/d","d":null}"#, "d leaves, a enters"),
                ("m", #"{"p":"/scores","d":{"a":null,"f":{"s":4},"g":{"s":2}}}"#, "a leaves, f and g compete"),
                ("p", #"{"p":"/scores","d":{"only":{"s":1}}}"#, "the whole list is replaced"),
                ("p", #"{"p":"/scores","d":null}"#, "the window empties"),
            ]
            for (action, body, what) in writes {
                let exchange = try await writer.request(action, body)
                XCTAssertEqual(exchange.response.status, "ok", what)
                var expected = try restGet(port, "/scores", query: query)
                if expected == .object([]) { expected = .null }
                try await client.pushes(into: &view, until: { normalised($0.window(7)) == normalised(expected) })
                XCTAssertTrue(client.pushLog.allSatisfy { $0.tag == 7 }, "\(what): every push carries the tag")
            }
            // A write elsewhere does not touch the window.
            try await writer.expectOK("p", #"{"p":"/elsewhere","d":1}"#)
            try await client.expectSilence("for a write outside the query")
            await client.close()
            await writer.close()
        }
    }

    /// The writer's own tagged listen gets the window's change before the write's ok.
    func testTaggedChangeComesBeforeTheWritersOk() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/scores", Self.scores)
            let client = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.track(tag: 1, at: "/scores")
            view.apply(
                try await client.expectOK("q", #"{"p":"/scores","q":{"l":2,"vf":"l","i":"s"},"t":1,"h":""}"#)
                    .pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"a":{"s":1},"c":{"s":3}}"#)))
            let write = try await client.expectOK("p", #"{"p":"/scores/z","d":{"s":0}}"#)
            view.apply(write.pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"z":{"s":0},"a":{"s":1}}"#)))
            await client.close()
        }
    }

    /// Key and value queries (the encodings the SDK sends, recorded): no index warning for
    /// .key and .value, the windows right, and an unlisten by tag ends that listen only.
    func testKeyAndValueQueriesAndUnlistenByTag() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/keys", #"{"a":1,"b":2,"c":3,"d":4,"e":5}"#)
            try restPut(port, "/vals", #"{"p":2,"q":3,"r":3,"s":4}"#)
            let client = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.track(tag: 1, at: "/keys")
            view.track(tag: 2, at: "/vals")
            let keyQuery = #"{"sp":"b","sin":false,"l":2,"vf":"l","i":".key"}"#
            let valueQuery = #"{"sp":3,"sin":true,"ep":3,"ein":true,"i":".value"}"#
            var exchange = try await client.expectOK("q", #"{"p":"/keys","q":\#(keyQuery),"t":1,"h":""}"#)
            XCTAssertEqual(exchange.response.data, .object([]), "no warning for .key")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"c":3,"d":4}"#)))
            exchange = try await client.expectOK("q", #"{"p":"/vals","q":\#(valueQuery),"t":2,"h":""}"#)
            // Ordering by value reads an index as ordering by a child does: without
            // `".indexOn": ".value"` the listen is answered with Firebase's warning.
            XCTAssertEqual(exchange.response.data, json(#"{"w":["no_index"]}"#), "a .value order without .indexOn")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(2)), normalised(json(#"{"q":3,"r":3}"#)))

            // startAfter("b"): a new key "bb" enters the first two, d leaves.
            exchange = try await client.expectOK("p", #"{"p":"/keys/bb","d":0}"#)
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"bb":0,"c":3}"#)))
            // equalTo(3): p becomes 3 and enters.
            exchange = try await client.expectOK("p", #"{"p":"/vals/p","d":3}"#)
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(2)), normalised(json(#"{"p":3,"q":3,"r":3}"#)))

            // Unlisten tag 1 (with its query, as the SDK sends it): /keys pushes stop, /vals go on.
            exchange = try await client.expectOK("n", #"{"p":"/keys","q":\#(keyQuery),"t":1}"#)
            XCTAssertEqual(exchange.response.data, "")
            exchange = try await client.expectOK("p", #"{"p":"/keys/ba","d":0}"#)
            XCTAssertEqual(exchange.pushesBefore, [], "the /keys query was unlistened")
            exchange = try await client.expectOK("p", #"{"p":"/vals/q","d":9}"#)
            XCTAssertTrue(exchange.pushesBefore.allSatisfy { $0.tag == 2 })
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(2)), normalised(json(#"{"p":3,"r":3}"#)))
            await client.close()
        }
    }

    /// A default listen and a tagged listen at the same path live side by side: the default
    /// one gets every change untagged, the tagged one its window with its tag.
    func testDefaultAndTaggedListensOnOnePath() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/scores", Self.scores)
            let client = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.track(tag: 3, at: "/scores")
            view.apply(try await client.expectOK("q", #"{"p":"/scores","h":""}"#).pushesBefore)
            view.apply(
                try await client.expectOK("q", #"{"p":"/scores","q":{"l":1,"vf":"r","i":"s"},"t":3,"h":""}"#)
                    .pushesBefore)
            XCTAssertEqual(normalised(view.value(at: "/scores")), normalised(json(Self.scores)))
            XCTAssertEqual(view.window(3), json(#"{"b":{"s":5}}"#))
            let write = try await client.expectOK("p", #"{"p":"/scores/a/s","d":8}"#)
            view.apply(write.pushesBefore)
            XCTAssertEqual(view.value(at: "/scores/a/s"), .int(8))
            XCTAssertEqual(view.window(3), json(#"{"a":{"s":8}}"#))
            await client.close()
        }
    }

    /// With `.indexOn` for the child in the rules there is no warning.
    func testNoWarningWhenTheIndexIsDeclared() async throws {
        let rules = try temporaryFile(
            #"{"rules":{".read":true,".write":true,"scores":{".indexOn":["s"]}}}"#)
        try await withLiveServer(setting: \.rulesFile, to: rules) { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            try await client.expectOK("p", .object(["p": "/scores", "d": json(Self.scores)]))
            var view = WireView()
            view.track(tag: 1, at: "/scores")
            let listen = try await client.expectOK("q", #"{"p":"/scores","q":{"l":2,"vf":"r","i":"s"},"t":1,"h":""}"#)
            XCTAssertEqual(listen.response.data, .object([]))
            view.apply(listen.pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"b":{"s":5},"c":{"s":3}}"#)))
            let unindexed = try await client.expectOK("q", #"{"p":"/other","q":{"l":2,"vf":"r","i":"s"},"t":2,"h":""}"#)
            XCTAssertEqual(unindexed.response.data, json(#"{"w":["no_index"]}"#))
            await client.close()
        }
    }

    /// A tagged listen re-sent with the hash of the window it holds gets no data; with any
    /// other hash it gets the window.
    func testTaggedListenHashSkip() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(
                port, "/list", #"{"-P8FJGc4jKh7OwcjKN97":{"score":7},"w":{"score":10},"y":{"score":5},"z":{"score":3}}"#
            )
            let client = try await FirebaseWireClient(port: port)
            // The window's hash from the recorded session.
            let matching = try await client.expectOK(
                "q", #"{"p":"/list","q":{"l":2,"vf":"r","i":"score"},"t":1,"h":"S4RwUWS5QofmJCnw/YkZtNiSQsM="}"#)
            XCTAssertEqual(matching.pushesBefore, [])
            var view = WireView()
            view.track(tag: 2, at: "/list")
            let stale = try await client.expectOK(
                "q", #"{"p":"/list","q":{"l":3,"vf":"r","i":"score"},"t":2,"h":"S4RwUWS5QofmJCnw/YkZtNiSQsM="}"#)
            view.apply(stale.pushesBefore)
            XCTAssertEqual(
                normalised(view.window(2)),
                normalised(json(#"{"-P8FJGc4jKh7OwcjKN97":{"score":7},"w":{"score":10},"y":{"score":5}}"#)))
            await client.close()
        }
    }

    /// Two tagged queries on one path: each gets its own window with its own tag, and
    /// unlistening one by its tag leaves the other live. The index is a deeper child path.
    func testTwoTaggedQueriesOnOnePath() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/p", #"{"a":{"m":{"r":1}},"b":{"m":{"r":2}},"c":{"m":{"r":3}}}"#)
            let client = try await FirebaseWireClient(port: port)
            let writer = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.track(tag: 11, at: "/p")
            view.track(tag: 12, at: "/p")
            let first = #"{"l":1,"vf":"l","i":"m/r"}"#
            let last = #"{"l":1,"vf":"r","i":"m/r"}"#
            view.apply(try await client.expectOK("q", #"{"p":"/p","q":\#(first),"t":11,"h":""}"#).pushesBefore)
            view.apply(try await client.expectOK("q", #"{"p":"/p","q":\#(last),"t":12,"h":""}"#).pushesBefore)
            XCTAssertEqual(view.window(11), json(#"{"a":{"m":{"r":1}}}"#))
            XCTAssertEqual(view.window(12), json(#"{"c":{"m":{"r":3}}}"#))
            try await writer.expectOK("p", #"{"p":"/p/z","d":{"m":{"r":9}}}"#)
            try await client.pushes(into: &view, until: { $0.window(12) == json(#"{"z":{"m":{"r":9}}}"#) })
            XCTAssertEqual(view.window(11), json(#"{"a":{"m":{"r":1}}}"#))
            try await client.expectOK("n", #"{"p":"/p","q":\#(last),"t":12}"#)
            try await writer.expectOK("p", #"{"p":"/p/y","d":{"m":{"r":0}}}"#)
            try await client.pushes(into: &view, until: { $0.window(11) == json(#"{"y":{"m":{"r":0}}}"#) })
            try await writer.expectOK("p", #"{"p":"/p/x","d":{"m":{"r":99}}}"#)
            try await client.expectSilence("for a write only the unlistened query would see")
            XCTAssertTrue(client.pushLog.allSatisfy { $0.tag == 11 || $0.tag == 12 }, "\(client.pushLog)")
            await client.close()
            await writer.close()
        }
    }

    /// Priorities travel in export form; a query with no index orders by priority.
    func testPrioritiesInExportFormAndThePriorityOrder() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            try await client.expectOK(
                "p", #"{"p":"/pr","d":{"a":{".value":"A",".priority":3},"b":{".value":"B",".priority":1}}}"#)
            var view = WireView()
            view.apply(try await client.expectOK("q", #"{"p":"/pr","h":""}"#).pushesBefore)
            XCTAssertEqual(view.value(at: "/pr/a/.priority"), .int(3), "\(view.tree)")
            XCTAssertEqual(view.value(at: "/pr/a/.value"), "A", "\(view.tree)")
            view.track(tag: 1, at: "/pr")
            view.apply(try await client.expectOK("q", #"{"p":"/pr","q":{"l":1,"vf":"r"},"t":1,"h":""}"#).pushesBefore)
            XCTAssertEqual(view.window(1), json(#"{"a":{".value":"A",".priority":3}}"#))
            // setPriority is a put to .priority: b now sorts last and enters the window.
            let write = try await client.expectOK("p", #"{"p":"/pr/b/.priority","d":7}"#)
            view.apply(write.pushesBefore)
            XCTAssertEqual(view.window(1), json(#"{"b":{".value":"B",".priority":7}}"#))
            XCTAssertEqual(view.value(at: "/pr/b/.priority"), .int(7), "\(view.tree)")
            let stored = try await client.expectOK("g", #"{"p":"/pr/b","q":{}}"#)
            XCTAssertEqual(stored.response.data, json(#"{".value":"B",".priority":7}"#))
            await client.close()
        }
    }

    /// The query objects the SDK writes for start/end with key names, startAfter and endBefore
    /// on a child index (the [MAX_NAME] and [MIN_NAME] sentinels), equalTo with a key, and key
    /// ranges: get answers with the window and a tagged listen gets the same window.
    func testQueryObjectsWithNamesAndSentinels() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/s", #"{"a":{"s":1},"b":{"s":3},"c":{"s":3},"d":{"s":5}}"#)
            let client = try await FirebaseWireClient(port: port)
            let cases: [(String, String, String)] = [
                ("startAt(3, c)", #"{"sp":3,"sn":"c","sin":true,"i":"s"}"#, #"{"c":{"s":3},"d":{"s":5}}"#),
                ("startAfter(3)", #"{"sp":3,"sn":"[MAX_NAME]","sin":false,"i":"s"}"#, #"{"d":{"s":5}}"#),
                ("endBefore(3)", #"{"ep":3,"en":"[MIN_NAME]","ein":false,"i":"s"}"#, #"{"a":{"s":1}}"#),
                ("endAt(3, b)", #"{"ep":3,"en":"b","ein":true,"i":"s"}"#, #"{"a":{"s":1},"b":{"s":3}}"#),
                (
                    "equalTo(3, b)", #"{"sp":3,"sn":"b","sin":true,"ep":3,"en":"b","ein":true,"i":"s"}"#,
                    #"{"b":{"s":3}}"#
                ),
                (
                    "key range b..c", #"{"sp":"b","sin":true,"ep":"c","ein":true,"i":".key"}"#,
                    #"{"b":{"s":3},"c":{"s":3}}"#
                ),
                (
                    "startAt(3) limitToLast(2)", #"{"sp":3,"sin":true,"l":2,"vf":"r","i":"s"}"#,
                    #"{"c":{"s":3},"d":{"s":5}}"#
                ),
            ]
            var tag: Int64 = 20
            for (what, query, expected) in cases {
                let get = try await client.request("g", #"{"p":"/s","q":\#(query)}"#)
                XCTAssertEqual(get.response.status, "ok", what)
                XCTAssertEqual(normalised(get.response.data), normalised(json(expected)), "get \(what)")
                tag += 1
                var view = WireView()
                view.track(tag: tag, at: "/s")
                let listen = try await client.request("q", #"{"p":"/s","q":\#(query),"t":\#(tag),"h":""}"#)
                XCTAssertEqual(listen.response.status, "ok", what)
                view.apply(listen.pushesBefore)
                XCTAssertEqual(normalised(view.window(tag)), normalised(json(expected)), "listen \(what)")
            }
            await client.close()
        }
    }

    /// A tagged window under a stream of writes from two connections (scores moving, children
    /// added and removed): after the last write the client's window is the query's answer.
    func testWindowConvergesUnderAStreamOfWrites() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.track(tag: 1, at: "/board")
            view.apply(
                try await client.expectOK("q", #"{"p":"/board","q":{"l":3,"vf":"r","i":"s"},"t":1,"h":""}"#)
                    .pushesBefore)
            var generator = SystemRandomNumberGenerator()
            let writers = [try await FirebaseWireClient(port: port), try await FirebaseWireClient(port: port)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, writer) in writers.enumerated() {
                    let seeds = (0..<150).map { _ in
                        (Int.random(in: 0..<12, using: &generator), Int.random(in: -5..<40, using: &generator))
                    }
                    group.addTask {
                        for (key, score) in seeds {
                            let body: JSONValue =
                                score < 0
                                ? .object(["p": .string("/board/k\(key)"), "d": .null])
                                : n == 0
                                    ? .object(["p": .string("/board/k\(key)"), "d": .object(["s": .int(Int64(score))])])
                                    : .object(["p": "/board", "d": .object(["k\(key)/s": .int(Int64(score))])])
                            _ = try await writer.expectOK(n == 0 || score < 0 ? "p" : "m", body)
                        }
                    }
                }
                try await group.waitForAll()
            }
            var expected = try restGet(port, "/board", query: "orderBy=%22s%22&limitToLast=3")
            if expected == .object([]) { expected = .null }
            try await client.pushes(into: &view, until: { normalised($0.window(1)) == normalised(expected) })
            // Whatever was still on its way leaves the window as it is.
            for case .push(let push) in try await client.messages(within: 0.3) { view.apply(push) }
            XCTAssertEqual(normalised(view.window(1)), normalised(expected))
            for client in [client] + writers { await client.close() }
        }
    }
}
