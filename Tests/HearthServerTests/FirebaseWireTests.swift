import Foundation
import HearthJSON
import HearthServer
import XCTest

/// The Firebase wire protocol on `/.ws` of the HTTP listener, against the real server over real
/// sockets with the suite's own client (Support/FirebaseWireClient.swift). The expectations come
/// from the protocol (the order of data and answers, the shapes of hello, answers and pushes) and
/// from what the data must be afterwards, not from one server's choice among allowed shapes.
final class FirebaseWireTests: XCTestCase {
    /// The recorded SDK session, replayed request by request: what the SDK sent, and what the
    /// answers must be for the SDK to show what it showed.
    func testRecordedSDKSessionReplayed() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "", recordedSessionSeed)
            let before = Int64(Date().timeIntervalSince1970 * 1000)

            // 01: the upgrade with the SDK's query; the hello comes first, then stats.
            let main = try await FirebaseWireClient(
                port: port, target: FirebaseWireClient.sdkTarget(ns: "default"), headers: [("User-Agent", "node")])
            XCTAssertEqual(main.receivedFrames.count, 1, "the hello is the first frame")
            XCTAssertEqual(main.hello["v"], "5")
            XCTAssertEqual(main.hello["h"], .string("127.0.0.1:\(port)"))
            let session = main.hello["s"]?.stringValue ?? ""
            XCTAssertFalse(session.isEmpty, "the hello names a session: \(main.hello)")
            let ts = main.hello["ts"]?.int64Value ?? 0
            XCTAssertLessThanOrEqual(abs(ts - before), 10_000, "the hello's ts is the server's time in ms")
            try await main.stats()
            var view = WireView()

            // 02: a put with no listen: ok "".
            var exchange = try await main.request("p", #"{"p":"/a","d":1}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")
            XCTAssertEqual(exchange.pushesBefore, [])

            // 03: a default listen: the data, then ok {}.
            exchange = try await main.request("q", #"{"p":"/a","h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, .object([]))
            XCTAssertFalse(exchange.pushesBefore.isEmpty, "the listen's data comes before its ok")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/a"), .int(1))

            // 04: limitToLast(2) ordered by the child "score", tagged 1: the window, then ok
            // with the no_index warning (no .indexOn for score).
            view.track(tag: 1, at: "/list")
            exchange = try await main.request("q", #"{"p":"/list","q":{"l":2,"vf":"r","i":"score"},"t":1,"h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, json(#"{"w":["no_index"]}"#))
            XCTAssertFalse(exchange.pushesBefore.isEmpty, "the window comes before the ok")
            XCTAssertEqual(exchange.pushesBefore.map(\.tag), exchange.pushesBefore.map { _ in 1 })
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"z":{"score":3},"y":{"score":5}}"#)))

            // 04b: w enters the window, z leaves; the window's update comes before the write's ok.
            exchange = try await main.request("p", #"{"p":"/list/w","d":{"score":10}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")
            XCTAssertTrue(exchange.pushesBefore.allSatisfy { $0.tag == 1 }, "\(exchange.pushesBefore)")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"y":{"score":5},"w":{"score":10}}"#)))

            // 05: a multi-path update at the root: the listen on /a learns 2 before the ok.
            exchange = try await main.request("m", #"{"p":"/","d":{"a":2,"b/c":3}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/a"), .int(2))
            XCTAssertEqual(normalised(view.window(1)), normalised(json(#"{"y":{"score":5},"w":{"score":10}}"#)))

            // 06: push() is a put to a client-made key: it enters the window, y leaves.
            exchange = try await main.request("p", #"{"p":"/list/-P8FJGc4jKh7OwcjKN97","d":{"score":7}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(
                normalised(view.window(1)),
                normalised(json(#"{"-P8FJGc4jKh7OwcjKN97":{"score":7},"w":{"score":10}}"#)))

            // 07: onDisconnect set, update (with a server timestamp), remove, set then cancel.
            for (action, body) in [
                ("o", #"{"p":"/presence/me","d":"offline"}"#),
                ("om", #"{"p":"/presence/meta","d":{"lastSeen":{".sv":"timestamp"},"state":"gone"}}"#),
                ("o", #"{"p":"/presence/session","d":null}"#),
                ("o", #"{"p":"/presence/temp","d":"x"}"#),
                ("oc", #"{"p":"/presence/temp","d":null}"#),
            ] {
                exchange = try await main.request(action, body)
                XCTAssertEqual(exchange.response.status, "ok", "\(action) \(body)")
                XCTAssertEqual(exchange.response.data, "", "\(action) \(body)")
                XCTAssertEqual(exchange.pushesBefore, [], "onDisconnect registrations change nothing yet")
            }

            // 08: the transaction: listen, a put hashed for null is stale (the current 5 is known
            // before the answer), the retry hashed for 5 succeeds, then the unlisten.
            exchange = try await main.request("q", #"{"p":"/counter","h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/counter"), .int(5))
            exchange = try await main.request("p", #"{"p":"/counter","d":1,"h":""}"#)
            XCTAssertEqual(exchange.response.status, "datastale")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/counter"), .int(5), "the current value stands when the hash is stale")
            exchange = try await main.request("p", #"{"p":"/counter","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/counter"), .int(6), "the listen learns 6 before the ok")
            exchange = try await main.request("n", #"{"p":"/counter"}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")

            // 09: server values, resolved by the server.
            exchange = try await main.request("p", #"{"p":"/ts","d":{".sv":"timestamp"}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            exchange = try await main.request("p", #"{"p":"/counter2","d":{".sv":{"increment":2}}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            let after = Int64(Date().timeIntervalSince1970 * 1000)
            let stamped = try await main.request("g", #"{"p":"/ts","q":{}}"#).response
            XCTAssertEqual(stamped.status, "ok")
            XCTAssertTrue(
                (before - 1000...after + 1000).contains(stamped.data.int64Value ?? 0),
                "the timestamp is the server's time in ms: \(stamped)")
            let counter2 = try await main.request("g", #"{"p":"/counter2","q":{}}"#).response.data
            XCTAssertEqual(counter2, .int(2))

            // 10: get.
            exchange = try await main.request("g", #"{"p":"/b","q":{}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(normalised(exchange.response.data), normalised(json(#"{"old":true,"c":3}"#)))
            XCTAssertEqual(exchange.pushesBefore, [])

            // 11: once(): listen, data before ok, unlisten.
            exchange = try await main.request("q", #"{"p":"/seeded","h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/seeded"), json(#"{"hello":"world"}"#))
            try await main.expectOK("n", #"{"p":"/seeded"}"#)

            // 12: a 40,000-character value: sent as 3 frames, and pushed back split.
            let big = String(repeating: "x", count: 40_000)
            let r = main.takeRequestNumber()
            let text = #"{"t":"d","d":{"r":\#(r),"a":"p","b":{"p":"/big","d":"\#(big)"}}}"#
            let frames = FirebaseWireClient.frames(of: text)
            XCTAssertEqual(frames.first, "3")
            XCTAssertEqual(frames.dropFirst().map(\.utf8.count), [16_384, 16_384, text.utf8.count - 32_768])
            for frame in frames { try await main.sendRawFrame(frame) }
            exchange = try await main.exchange(for: r)
            XCTAssertEqual(exchange.response.status, "ok")
            let framesBefore = main.receivedFrames.count
            exchange = try await main.request("q", #"{"p":"/big","h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/big").stringValue?.count, 40_000)
            let bigFrames = Array(main.receivedFrames[framesBefore...])
            XCTAssertTrue(
                bigFrames.allSatisfy { $0.utf8.count <= 16_384 }, "frames of \(bigFrames.map(\.utf8.count)) bytes")
            XCTAssertFalse(bigFrames.contains("0"), "a server never sends a 0 frame")
            XCTAssertTrue(
                bigFrames.contains { $0.count <= 6 && Int($0) ?? 0 > 1 }, "a count frame announces the pieces")
            try await main.expectOK("n", #"{"p":"/big"}"#)

            // 13: off(): after the unlisten, writes to /a push nothing.
            try await main.expectOK("n", #"{"p":"/a"}"#)
            exchange = try await main.request("p", #"{"p":"/a","d":3}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.pushesBefore, [], "no listen covers /a any more")

            // 14: a second connection listens to presence: null hashes to "", so no data, just ok.
            let observer = try await FirebaseWireClient(port: port, target: FirebaseWireClient.sdkTarget(ns: "default"))
            try await observer.stats()
            exchange = try await observer.request("q", #"{"p":"/presence","h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.pushesBefore, [], "an absent location hashes to \"\": nothing to send")

            // 15: the main connection goes away: its onDisconnect operations run and the
            // observer sees their result (temp was cancelled).
            await main.close()
            var observed = WireView()
            try await observer.pushes(
                into: &observed,
                until: { $0.value(at: "/presence/me") == "offline" && $0.value(at: "/presence/meta/state") == "gone" })
            let lastSeen = observed.value(at: "/presence/meta/lastSeen").int64Value ?? 0
            XCTAssertTrue(
                (before - 1000...Int64(Date().timeIntervalSince1970 * 1000) + 1000).contains(lastSeen),
                "the onDisconnect timestamp is resolved when it runs: \(observed.tree)")
            XCTAssertEqual(observed.value(at: "/presence/temp"), .null)
            XCTAssertEqual(
                normalised(try restGet(port, "/presence")),
                normalised(.object(["me": "offline", "meta": .object(["lastSeen": .int(lastSeen), "state": "gone"])])))

            // Reconnect with ls= the old session: the re-sent tagged listen carries the hash of the
            // window it holds, which matches: no data, just ok with the warning.
            let again = try await FirebaseWireClient(
                port: port, target: FirebaseWireClient.sdkTarget(ns: "default", extra: "&ls=\(session)"))
            exchange = try await again.request(
                "q", #"{"p":"/list","q":{"l":2,"vf":"r","i":"score"},"t":1,"h":"S4RwUWS5QofmJCnw/YkZtNiSQsM="}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, json(#"{"w":["no_index"]}"#))
            XCTAssertEqual(exchange.pushesBefore, [], "the window's hash matches: nothing to send")

            // 17: ping → pong; the keepalive 0 is ignored and the connection goes on.
            try await again.sendControl("p")
            let pong = try await again.nextControl()
            XCTAssertEqual(pong.type, "o")
            try await again.sendRawFrame("0")
            try await again.expectSilence("after a keepalive")
            let a = try await again.request("g", #"{"p":"/a","q":{}}"#).response.data
            XCTAssertEqual(a, .int(3))
            await again.close()
            await observer.close()
        }
    }

    /// The hello: a control `h` first, with the server's time, version 5, the Host header of
    /// the upgrade as the host, and a fresh session id per connection.
    func testHelloNamesTheHostOfTheUpgradeAndAFreshSession() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let first = try await FirebaseWireClient(port: port, hostHeader: "localhost:4430")
            XCTAssertEqual(first.hello["h"], "localhost:4430")
            XCTAssertEqual(first.hello["v"], "5")
            XCTAssertNotNil(first.hello["ts"]?.int64Value)
            let second = try await FirebaseWireClient(port: port)
            XCTAssertEqual(second.hello["h"], .string("127.0.0.1:\(port)"))
            XCTAssertNotNil(first.hello["s"]?.stringValue)
            XCTAssertNotEqual(first.hello["s"], second.hello["s"])
            try await first.stats()
            try await second.stats()
            await first.close()
            await second.close()
        }
    }

    /// A listen whose `h` is the hash of the data gets no data, only ok; any other `h` gets the
    /// data first. The hashes of 5, true and 500 are known values of the protocol's hash.
    func testListenSkipsTheDataWhenTheHashMatches() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "", #"{"five":5,"yes":true,"many":500,"s":"text"}"#)
            let client = try await FirebaseWireClient(port: port)
            for (path, hash) in [
                ("/five", "w28swksk9+tXf5jEdS9R5oSFAv8="), ("/yes", "E5z61QM0lN/U2WsOnusszCTkR8M="),
                ("/many", "Ajg9bohDwTVmqR14o1bVJnneryM="), ("/absent", ""),
            ] {
                let exchange = try await client.request("q", .object(["p": .string(path), "h": .string(hash)]))
                XCTAssertEqual(exchange.response.status, "ok", path)
                XCTAssertEqual(exchange.response.data, .object([]), path)
                XCTAssertEqual(exchange.pushesBefore, [], "\(path): the hash matches")
            }
            // A stale hash: the data comes, before the ok.
            var view = WireView()
            let exchange = try await client.request("q", #"{"p":"/s","h":"w28swksk9+tXf5jEdS9R5oSFAv8="}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/s"), "text")
            // The listens with matching hashes are live all the same.
            let write = try await client.request("p", #"{"p":"/five","d":6}"#)
            view.apply(write.pushesBefore)
            XCTAssertEqual(view.value(at: "/five"), .int(6))
            await client.close()
        }
    }

    /// The ordering rule: a writer listening on the path gets the change before its write's
    /// ok; another connection listening gets it too.
    func testWriterGetsItsOwnChangeBeforeTheOk() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let writer = try await FirebaseWireClient(port: port)
            let other = try await FirebaseWireClient(port: port)
            var writerView = WireView()
            var otherView = WireView()
            for client in [writer, other] {
                let listen = try await client.request("q", #"{"p":"/room","h":""}"#)
                XCTAssertEqual(listen.response.status, "ok")
                XCTAssertEqual(listen.pushesBefore, [], "nothing at /room yet")
            }
            let writes: [(String, String, String)] = [
                ("p", #"{"p":"/room/topic","d":"hello"}"#, #"{"topic":"hello"}"#),
                ("p", #"{"p":"/room","d":{"topic":"bye","n":1}}"#, #"{"topic":"bye","n":1}"#),
                ("m", #"{"p":"/room","d":{"n":2,"deep/er":true}}"#, #"{"topic":"bye","n":2,"deep":{"er":true}}"#),
                ("p", #"{"p":"/","d":{"room":{"n":3}}}"#, #"{"n":3}"#),
                ("p", #"{"p":"/room/n","d":null}"#, "null"),
            ]
            for (action, body, expected) in writes {
                let exchange = try await writer.request(action, body)
                XCTAssertEqual(exchange.response.status, "ok", body)
                XCTAssertFalse(exchange.pushesBefore.isEmpty, "\(body): the change comes before the ok")
                writerView.apply(exchange.pushesBefore)
                XCTAssertEqual(normalised(writerView.value(at: "/room")), normalised(json(expected)), body)
                try await other.pushes(
                    into: &otherView, until: { normalised($0.value(at: "/room")) == normalised(json(expected)) })
            }
            await writer.close()
            await other.close()
        }
    }

    /// A merge is one atomic write: a listener above it sees every path change together,
    /// never a state with only some of them.
    func testMergeIsOneAtomicChange() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/acct", #"{"a":{"balance":10},"b":{"balance":0}}"#)
            let watcher = try await FirebaseWireClient(port: port)
            var view = WireView()
            let listen = try await watcher.request("q", #"{"p":"/acct","h":""}"#)
            view.apply(listen.pushesBefore)
            let writer = try await FirebaseWireClient(port: port)
            let exchange = try await writer.request("m", #"{"p":"/acct","d":{"a/balance":4,"b/balance":6,"c":null}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")
            let expected = json(#"{"a":{"balance":4},"b":{"balance":6}}"#)
            // Every push applied shows either the old or the new state of both accounts.
            let deadline = Date().addingTimeInterval(10)
            while normalised(view.value(at: "/acct")) != normalised(expected), Date() < deadline {
                let push = try await watcher.nextPush()
                view.apply(push)
                let a = view.value(at: "/acct/a/balance")
                let b = view.value(at: "/acct/b/balance")
                XCTAssertTrue(
                    (a == .int(10) && b == .int(0)) || (a == .int(4) && b == .int(6)),
                    "a push left a half-applied merge: \(push) → \(view.tree)")
            }
            XCTAssertEqual(normalised(view.value(at: "/acct")), normalised(expected))
            XCTAssertEqual(normalised(try restGet(port, "/acct")), normalised(expected))
            await watcher.close()
            await writer.close()
        }
    }

    /// onDisconnect operations run when the socket closes, abruptly too, in the order they were
    /// registered, with server values resolved then; a cancel drops everything at and below its
    /// path; another connection sees the results.
    func testOnDisconnectRunsWhenTheSocketCloses() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/users/ada", #"{"online":true,"tmp":{"a":1},"visits":4}"#)
            let observer = try await FirebaseWireClient(port: port)
            var view = WireView()
            view.apply(try await observer.request("q", #"{"p":"/users/ada","h":""}"#).pushesBefore)
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let client = try await FirebaseWireClient(port: port)
            for (action, body) in [
                ("o", #"{"p":"/users/ada/online","d":false}"#),
                ("om", #"{"p":"/users/ada","d":{"lastSeen":{".sv":"timestamp"},"visits":{".sv":{"increment":1}}}}"#),
                ("o", #"{"p":"/users/ada/tmp","d":null}"#),
                ("o", #"{"p":"/users/ada/note","d":"first"}"#),
                ("o", #"{"p":"/users/ada/note","d":"second"}"#),
                ("o", #"{"p":"/users/ada/gone/x","d":1}"#),
                ("oc", #"{"p":"/users/ada/gone","d":null}"#),
            ] {
                let exchange = try await client.request(action, body)
                XCTAssertEqual(exchange.response.status, "ok", body)
                XCTAssertEqual(exchange.response.data, "", body)
            }
            try await observer.expectSilence("before the socket closes")
            await client.closeAbruptly()
            try await observer.pushes(
                into: &view,
                until: {
                    $0.value(at: "/users/ada/online") == .bool(false) && $0.value(at: "/users/ada/note") == "second"
                })
            let stored = try restGet(port, "/users/ada")
            XCTAssertEqual(stored["online"], .bool(false))
            XCTAssertEqual(stored["tmp"], nil)
            XCTAssertEqual(stored["gone"], nil)
            XCTAssertEqual(stored["visits"], .int(5))
            XCTAssertEqual(stored["note"], "second")
            let lastSeen = stored["lastSeen"]?.int64Value ?? 0
            XCTAssertTrue((before...Int64(Date().timeIntervalSince1970 * 1000) + 1000).contains(lastSeen), "\(stored)")
            try await observer.pushes(
                into: &view, until: { normalised($0.value(at: "/users/ada")) == normalised(stored) })
            await observer.close()
        }
    }

    /// A hashed put is a compare-and-set: a stale hash changes nothing and answers datastale
    /// after the current value reached the client's listen; a matching hash applies.
    func testTransactionCompareAndSet() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/m/count", "5")
            let client = try await FirebaseWireClient(port: port)
            var view = WireView()
            let listen = try await client.request("q", #"{"p":"/m/count","h":""}"#)
            view.apply(listen.pushesBefore)
            XCTAssertEqual(view.value(at: "/m/count"), .int(5))
            // Another connection changes it behind the client's back.
            let other = try await FirebaseWireClient(port: port)
            try await other.expectOK("p", #"{"p":"/m/count","d":7}"#)
            // The client's transaction still hashes 5: stale, and 7 is known before the answer.
            var exchange = try await client.request("p", #"{"p":"/m/count","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}"#)
            XCTAssertEqual(exchange.response.status, "datastale")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/m/count"), .int(7), "the current value reaches the client before datastale")
            XCTAssertEqual(try restGet(port, "/m/count"), .int(7))
            // The retry hashes what the client now has.
            let current = try await client.request("g", #"{"p":"/m/count","q":{}}"#)
            XCTAssertEqual(current.response.data, .int(7))
            // A transaction on an absent location hashes "".
            exchange = try await client.request("p", #"{"p":"/m/fresh","d":1,"h":""}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(try restGet(port, "/m/fresh"), .int(1))
            // A transaction with the right hash of 5 (the first value) on a location holding 5.
            try await other.expectOK("p", #"{"p":"/m/count","d":5}"#)
            try await client.pushes(into: &view, until: { $0.value(at: "/m/count") == .int(5) })
            exchange = try await client.request("p", #"{"p":"/m/count","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, "")
            view.apply(exchange.pushesBefore)
            XCTAssertEqual(view.value(at: "/m/count"), .int(6), "the listen learns the result before the ok")
            await client.close()
            await other.close()
        }
    }

    /// Server values: timestamp and increment, in puts, in merges, on absent and non-numeric
    /// values (increment counts from 0 there).
    func testServerValuesAreResolvedByTheServer() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/sv", #"{"n":10,"word":"x"}"#)
            let client = try await FirebaseWireClient(port: port)
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            for (action, body) in [
                ("p", #"{"p":"/sv/ts","d":{".sv":"timestamp"}}"#),
                ("p", #"{"p":"/sv/n","d":{".sv":{"increment":2}}}"#),
                ("p", #"{"p":"/sv/absent","d":{".sv":{"increment":2}}}"#),
                ("p", #"{"p":"/sv/word","d":{".sv":{"increment":3}}}"#),
                ("m", #"{"p":"/sv","d":{"n":{".sv":{"increment":5}},"deep/path":"y","when":{".sv":"timestamp"}}}"#),
            ] {
                let exchange = try await client.request(action, body)
                XCTAssertEqual(exchange.response.status, "ok", body)
            }
            let after = Int64(Date().timeIntervalSince1970 * 1000)
            let stored = try await client.request("g", #"{"p":"/sv","q":{}}"#).response
            XCTAssertEqual(stored.status, "ok")
            XCTAssertEqual(stored.data["n"], .int(17))
            XCTAssertEqual(stored.data["absent"], .int(2))
            XCTAssertEqual(stored.data["word"], .int(3))
            XCTAssertEqual(stored.data["deep"], json(#"{"path":"y"}"#))
            for key in ["ts", "when"] {
                XCTAssertTrue((before - 1000...after + 1000).contains(stored.data[key]?.int64Value ?? 0), "\(stored)")
            }
            await client.close()
        }
    }

    /// get: the value, null for nothing, the window for a query; no listen is created.
    func testGetAnswersWithTheValue() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/g", #"{"a":{"s":1},"b":{"s":3},"c":{"s":2}}"#)
            let client = try await FirebaseWireClient(port: port)
            var exchange = try await client.request("g", #"{"p":"/g","q":{}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(
                normalised(exchange.response.data), normalised(json(#"{"a":{"s":1},"b":{"s":3},"c":{"s":2}}"#)))
            exchange = try await client.request("g", #"{"p":"/nothing","q":{}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(exchange.response.data, .null)
            exchange = try await client.request("g", #"{"p":"/g","q":{"l":2,"vf":"l","i":".key"}}"#)
            XCTAssertEqual(exchange.response.status, "ok")
            XCTAssertEqual(normalised(exchange.response.data), normalised(json(#"{"a":{"s":1},"b":{"s":3}}"#)))
            // No listen was left behind.
            exchange = try await client.request("p", #"{"p":"/g/a","d":null}"#)
            XCTAssertEqual(exchange.pushesBefore, [])
            try await client.expectSilence("after a write, with no listen")
            await client.close()
        }
    }

    /// Long messages both ways: a 40,000-character value split by the client arrives whole;
    /// the server splits what it sends into count-prefixed pieces of at most 16,384 bytes, cut
    /// between characters (multi-byte text too).
    func testLongMessagesAreSplitBothWays() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            let ascii = String(repeating: "x", count: 40_000)
            let multibyte = String(repeating: "é€😀", count: 4_000)
            for (key, value) in [("ascii", ascii), ("multibyte", multibyte)] {
                let exchange = try await client.request(
                    "p", .object(["p": .string("/big/\(key)"), "d": .string(value)]))
                XCTAssertEqual(exchange.response.status, "ok", key)
                let framesBefore = client.receivedFrames.count
                var view = WireView()
                let listen = try await client.request("q", .object(["p": .string("/big/\(key)"), "h": ""]))
                XCTAssertEqual(listen.response.status, "ok")
                view.apply(listen.pushesBefore)
                XCTAssertEqual(view.value(at: "/big/\(key)"), .string(value), key)
                let frames = Array(client.receivedFrames[framesBefore...])
                XCTAssertTrue(frames.allSatisfy { $0.utf8.count <= 16_384 }, "\(key): \(frames.map(\.utf8.count))")
                XCTAssertFalse(frames.contains("0"))
                XCTAssertFalse(
                    frames.contains { $0.contains("\u{FFFD}") }, "\(key): a piece was cut inside a character")
                try await client.expectOK("n", .object(["p": .string("/big/\(key)")]))
            }
            let stored = try await client.request("g", #"{"p":"/big","q":{}}"#).response.data
            XCTAssertEqual(stored["ascii"]?.stringValue?.count, 40_000)
            XCTAssertEqual(stored["multibyte"], .string(multibyte))
            await client.close()
        }
    }

    /// Unlisten stops the pushes of that listen only.
    func testUnlistenStopsPushes() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            let writer = try await FirebaseWireClient(port: port)
            try await client.expectOK("q", #"{"p":"/u/a","h":""}"#)
            try await client.expectOK("q", #"{"p":"/u/b","h":""}"#)
            _ = try await writer.request("p", #"{"p":"/u/a","d":1}"#)
            let first = try await client.nextPush()
            XCTAssertEqual(canonicalWirePath(first.path), "/u/a")
            let unlisten = try await client.request("n", #"{"p":"/u/a"}"#)
            XCTAssertEqual(unlisten.response.status, "ok")
            XCTAssertEqual(unlisten.response.data, "")
            _ = try await writer.request("p", #"{"p":"/u/a","d":2}"#)
            _ = try await writer.request("p", #"{"p":"/u/b","d":3}"#)
            let push = try await client.nextPush()
            XCTAssertEqual(canonicalWirePath(push.path), "/u/b", "only the remaining listen pushes: \(push)")
            XCTAssertEqual(push.data, .int(3))
            try await client.expectSilence("after the unlisten")
            await client.close()
            await writer.close()
        }
    }

    /// The control ping is answered with a pong; the keepalive frame 0 is ignored; WebSocket
    /// pings get WebSocket pongs; the connection goes on.
    func testPingPongAndKeepalive() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            try await client.sendControl("p")
            let pong = try await client.nextControl()
            XCTAssertEqual(pong.type, "o")
            for _ in 0..<3 { try await client.sendRawFrame("0") }
            try await client.sendWebSocketPing([1, 2, 3])
            try await client.expectSilence("after keepalives")
            XCTAssertEqual(client.webSocketPongs, [[1, 2, 3]], "a WebSocket ping gets its pong")
            try await client.stats()
            XCTAssertFalse(client.isClosed)
            await client.close()
        }
    }

    /// Requests are answered in the order they were sent, even when sent without waiting:
    /// refused ones (a put without a path, an unknown action) and the ones answered without the
    /// engine (stats, unlisten) keep their place among the writes.
    func testPipelinedRequestsAreAnsweredInOrder() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            var numbers: [Int64] = []
            var refused: Set<Int64> = []
            let others: [(String, String, Bool)] = [
                ("p", #"{"d":1}"#, false), ("nope", #"{"p":"/x"}"#, false),
                ("s", #"{"c":{"sdk.js.11-8-0":1}}"#, true), ("n", #"{"p":"/nothing"}"#, true),
            ]
            for i in 0..<80 {
                numbers.append(
                    try await client.sendRequest("p", .object(["p": .string("/seq/k\(i % 5)"), "d": .int(Int64(i))])))
                if i % 10 == 0 { numbers.append(try await client.sendRequest("g", json(#"{"p":"/seq","q":{}}"#))) }
                if i % 10 == 5 {
                    let (action, body, ok) = others[(i / 10) % others.count]
                    let r = try await client.sendRequest(action, json(body))
                    numbers.append(r)
                    if !ok { refused.insert(r) }
                }
            }
            var answered: [Int64] = []
            while answered.count < numbers.count {
                if case .response(let response) = try await client.nextMessage() {
                    XCTAssertEqual(response.status == "ok", !refused.contains(response.r), "\(response)")
                    answered.append(response.r)
                }
            }
            XCTAssertEqual(answered, numbers, "answers out of request order")
            XCTAssertEqual(
                normalised(try restGet(server.httpPort ?? 0, "/seq")),
                normalised(json(#"{"k0":75,"k1":76,"k2":77,"k3":78,"k4":79}"#)))
            await client.close()
        }
    }

    /// The same location watched over the line protocol, a REST event stream and two wire
    /// connections (one of them writing) while writes from the line protocol and the wire race:
    /// every watcher sees the same values in the same order.
    func testEveryProtocolSeesTheSameWritesInTheSameOrder() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let line = try TestClient(port: server.port)
            try line.request(#"{"op":"subscribe","id":1,"path":"/race"}"#)
            let stream = try HTTPTestClient(port: port)
            XCTAssertEqual(try stream.openStream("/race.json").status, 200)
            let wireWriter = try await FirebaseWireClient(port: port)
            let wireWatcher = try await FirebaseWireClient(port: port)
            for client in [wireWriter, wireWatcher] {
                try await client.expectOK("q", #"{"p":"/race","h":""}"#)
            }
            let lineWriter = try TestClient(port: server.port)
            let count = 20
            // The line writer's requests go out without waiting, as do the wire writer's.
            for i in 0..<count {
                try lineWriter.send(#"{"op":"set","id":\#(i + 10),"path":"/race/x","value":"line-\#(i)"}"#)
                _ = try await wireWriter.sendRequest("p", .object(["p": "/race/x", "d": .string("wire-\(i)")]))
            }
            for _ in 0..<count { _ = try lineWriter.readResponse() }
            // The wire writer's answers, and the pushes it got meanwhile.
            var writerValues: [JSONValue] = []
            var okCount = 0
            while okCount < count {
                switch try await wireWriter.nextMessage() {
                case .response(let response):
                    XCTAssertEqual(response.status, "ok")
                    okCount += 1
                case .push(let push):
                    writerValues.append(contentsOf: Self.xValues(push))
                default: break
                }
            }
            while writerValues.count < 2 * count {
                writerValues.append(contentsOf: Self.xValues(try await wireWriter.nextPush()))
            }
            let final = try restGet(port, "/race/x")
            // The line subscriber: one value event per write.
            var lineValues: [JSONValue] = []
            while lineValues.count < 2 * count {
                let event = try line.readJSON()
                guard event["event"] == "value" else { continue }
                let value = event["value"]?["x"] ?? .null
                if value != .null { lineValues.append(value) }
            }
            // The REST stream: put events below or at the location.
            var streamValues: [JSONValue] = []
            while streamValues.count < 2 * count {
                guard let event = try stream.nextEvent() else { break }
                guard event.name == "put" || event.name == "patch" else { continue }
                let path = event.json["path"]?.stringValue ?? ""
                let data = event.json["data"] ?? .null
                if path == "/x" {
                    streamValues.append(data)
                } else if path == "/", let x = data["x"] {
                    streamValues.append(x)
                }
            }
            // The wire watcher.
            var watcherValues: [JSONValue] = []
            while watcherValues.count < 2 * count {
                watcherValues.append(contentsOf: Self.xValues(try await wireWatcher.nextPush()))
            }
            XCTAssertEqual(lineValues.count, 2 * count)
            XCTAssertEqual(lineValues.last, final)
            XCTAssertEqual(streamValues, lineValues, "the REST stream and the line protocol disagree")
            XCTAssertEqual(watcherValues, lineValues, "the wire watcher and the line protocol disagree")
            XCTAssertEqual(writerValues, lineValues, "the wire writer and the line protocol disagree")
            await wireWriter.close()
            await wireWatcher.close()
        }
    }

    /// Many connections listening and writing at once (puts and merges): every writer sees its
    /// own write before its ok, and every connection's pushes end at the data the database holds.
    func testManyConnectionsConverge() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            var clients: [FirebaseWireClient] = []
            for _ in 0..<12 { clients.append(try await FirebaseWireClient(port: port)) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, client) in clients.enumerated() {
                    group.addTask {
                        var view = WireView()
                        view.apply(try await client.expectOK("q", #"{"p":"/many","h":""}"#).pushesBefore)
                        for i in 0..<10 {
                            let value = JSONValue.int(Int64(i))
                            let write =
                                i % 2 == 0
                                ? try await client.expectOK("p", .object(["p": .string("/many/c\(n)"), "d": value]))
                                : try await client.expectOK(
                                    "m", .object(["p": "/many", "d": .object(["c\(n)": value])]))
                            view.apply(write.pushesBefore)
                            XCTAssertEqual(view.value(at: "/many/c\(n)"), value, "connection \(n), write \(i)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let stored = try restGet(port, "/many")
            XCTAssertEqual(stored.objectMembers?.count, 12)
            for (n, client) in clients.enumerated() {
                // Everything each connection received, in order, applied from the start.
                let deadline = Date().addingTimeInterval(10)
                var view = WireView()
                repeat {
                    view = WireView()
                    view.apply(client.pushLog)
                    if normalised(view.value(at: "/many")) == normalised(stored) { break }
                    try await Task.sleep(nanoseconds: 20_000_000)
                } while Date() < deadline
                XCTAssertEqual(normalised(view.value(at: "/many")), normalised(stored), "connection \(n)")
                await client.close()
            }
        }
    }

    /// Listens made and dropped while another connection writes without pause: the data a
    /// listen gets before its ok is never older than what an earlier listen saw, and the pushes
    /// that follow only move forward, so no write falls between a listen's data and its updates.
    func testListensDuringAStreamOfWritesNeverGoBackwards() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let writer = try await FirebaseWireClient(port: port)
            let listener = try await FirebaseWireClient(port: port)
            try await writer.expectOK("p", #"{"p":"/hot","d":{"v":0}}"#)
            let writes = Task {
                for i in 1...300 {
                    _ = try await writer.request("p", .object(["p": "/hot/v", "d": .int(Int64(i))]))
                }
            }
            var lastSeen: Int64 = 0
            for cycle in 0..<30 {
                var view = WireView()
                let listen = try await listener.expectOK("q", #"{"p":"/hot","h":""}"#)
                view.apply(listen.pushesBefore)
                guard let first = view.value(at: "/hot/v").int64Value else {
                    XCTFail("cycle \(cycle): the listen's data before its ok is \(view.tree)")
                    break
                }
                XCTAssertGreaterThanOrEqual(first, lastSeen, "cycle \(cycle): older data than an earlier listen saw")
                lastSeen = first
                let unlisten = try await listener.expectOK("n", #"{"p":"/hot"}"#)
                for push in unlisten.pushesBefore {
                    view.apply(push)
                    let now = view.value(at: "/hot/v").int64Value ?? -1
                    XCTAssertGreaterThanOrEqual(now, lastSeen, "cycle \(cycle): a push went backwards: \(push)")
                    lastSeen = now
                }
            }
            try await writes.value
            await writer.close()
            await listener.close()
        }
    }

    /// The values of /race/x a push of a listen at /race carries.
    private static func xValues(_ push: FirebaseWireClient.Push) -> [JSONValue] {
        let path = canonicalWirePath(push.path)
        if path == "/race/x" { return [push.data] }
        if path == "/race", let x = push.data["x"] { return [x] }
        return []
    }
}
