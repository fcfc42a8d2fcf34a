import Foundation
import HearthJSON
import HearthServer
import HearthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The Firebase wire protocol's refusals and edges: rules and identities, bad frames, unknown
/// actions, oversized messages, binary frames, unknown databases, TLS.
final class FirebaseWireEdgeTests: XCTestCase {
    private let rules = #"""
        {"rules":{
          "public":{".read":true,".write":true},
          "users":{"$uid":{".read":"auth != null && auth.uid == $uid",".write":"auth != null && auth.uid == $uid"}}
        }}
        """#

    /// Under rules, a listen and writes the rules refuse are answered permission_denied with
    /// "Permission denied", no data is pushed, the connection goes on, and a refused listen
    /// does not get later changes.
    func testPermissionDeniedForListenGetAndWrites() async throws {
        let rulesFile = try temporaryFile(rules)
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let port = server.httpPort ?? 0
            try restPut(port, "/secret", #"{"x":1}"#, admin: true)
            let client = try await FirebaseWireClient(port: port)
            try await client.stats()
            for (action, body) in [
                ("q", #"{"p":"/secret","h":""}"#),
                ("g", #"{"p":"/secret","q":{}}"#),
                ("p", #"{"p":"/secret/x","d":1}"#),
                ("m", #"{"p":"/secret","d":{"x":2}}"#),
                ("m", #"{"p":"/","d":{"public/a":1,"secret/x":2}}"#),
                ("o", #"{"p":"/secret/x","d":null}"#),
            ] {
                let exchange = try await client.request(action, body)
                XCTAssertEqual(exchange.response.status, "permission_denied", "\(action) \(body)")
                XCTAssertEqual(exchange.response.data, "Permission denied", "\(action) \(body)")
                XCTAssertEqual(exchange.pushesBefore, [], "\(action) \(body)")
            }
            // The refused multi-path update wrote nothing, not even its allowed part.
            XCTAssertEqual(try restGet(port, "/public/a", admin: true), .null)
            XCTAssertEqual(try restGet(port, "/secret", admin: true), json(#"{"x":1}"#))
            // The refused listen is not live: an admin write pushes nothing to it.
            try restPut(port, "/secret/x", "5", admin: true)
            try await client.expectSilence("for a refused listen")
            // Allowed requests still work.
            var view = WireView()
            view.apply(try await client.expectOK("q", #"{"p":"/public","h":""}"#).pushesBefore)
            view.apply(try await client.expectOK("p", #"{"p":"/public/a","d":1}"#).pushesBefore)
            XCTAssertEqual(view.value(at: "/public/a"), .int(1))
            await client.close()
        }
    }

    /// auth with an HS256 JWT: ok with the claims and the expiry; the rules see auth.uid;
    /// unauth drops the identity; bad tokens are refused and leave the connection usable.
    /// The Admin SDKs in emulator mode authenticate with the token `owner`: an admin only under
    /// `emulatorOwnerIsAdmin`, refused otherwise, and the rules decide for the connection.
    func testOwnerIsAnAdminOnlyUnderEmulatorOwnerIsAdmin() async throws {
        let rulesFile = try temporaryFile(rules)
        for ownerIsAdmin in [false, true] {
            let configure = secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.emulatorOwnerIsAdmin = ownerIsAdmin
            }
            try await withSecureServer(configure) { server in
                let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
                try await client.stats()
                let auth = try await client.request("gauth", .object(["cred": "owner"]))
                let write = try await client.request("p", #"{"p":"/users/bob/name","d":"Owner"}"#)
                if ownerIsAdmin {
                    XCTAssertEqual(auth.response.status, "ok", "\(auth)")
                    XCTAssertEqual(write.response.status, "ok", "\(write)")
                } else {
                    XCTAssertEqual(auth.response.status, "invalid_token", "\(auth)")
                    XCTAssertEqual(write.response.status, "permission_denied", "\(write)")
                }
                await client.close()
            }
        }
    }

    func testJWTAuthAndRulesSeeTheUid() async throws {
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(clock: clock, secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            try await client.stats()
            let token = try await testToken(uid: "alice", now: clock.now, ttlSeconds: 600)
            let auth = try await client.expectOK("auth", .object(["cred": .string(token)]))
            XCTAssertEqual(auth.response.data["auth"]?["sub"], "alice", "\(auth)")
            XCTAssertEqual(auth.response.data["expires"]?.int64Value, clock.now / 1000 + 600, "\(auth)")

            var view = WireView()
            view.apply(try await client.expectOK("q", #"{"p":"/users/alice","h":""}"#).pushesBefore)
            let write = try await client.expectOK("p", #"{"p":"/users/alice/name","d":"Alice"}"#)
            view.apply(write.pushesBefore)
            XCTAssertEqual(view.value(at: "/users/alice/name"), "Alice")
            var denied = try await client.request("q", #"{"p":"/users/bob","h":""}"#)
            XCTAssertEqual(denied.response.status, "permission_denied")
            denied = try await client.request("p", #"{"p":"/users/bob/name","d":"Mallory"}"#)
            XCTAssertEqual(denied.response.status, "permission_denied")

            // unauth: the identity is gone for the next requests.
            let unauth = try await client.expectOK("unauth", .object([]))
            XCTAssertEqual(unauth.response.data, "unauthenticated")
            denied = try await client.request("p", #"{"p":"/users/alice/name","d":"Eve"}"#)
            XCTAssertEqual(denied.response.status, "permission_denied")

            // Refused tokens: a status naming the problem, and the connection goes on.
            let expired = try await testToken(uid: "alice", now: clock.now - 7_200_000, ttlSeconds: 60)
            for (token, allowed) in [
                ("garbage", ["invalid_token"]),
                (expired, ["invalid_token", "expired_token"]),
            ] {
                let refused = try await client.request("auth", .object(["cred": .string(token)]))
                XCTAssertTrue(allowed.contains(refused.response.status), "\(refused)")
            }
            try await client.stats()
            XCTAssertFalse(client.isClosed)

            // gauth with the admin secret: the rules no longer apply.
            try await client.expectOK("gauth", .object(["cred": .string(TestSecrets.admin)]))
            try await client.expectOK("p", #"{"p":"/users/bob/name","d":"Bob"}"#)
            XCTAssertEqual(try restGet(port, "/users/bob/name", admin: true), "Bob")
            await client.close()
        }
    }

    /// A token that expires while the connection is open: the server pushes `ac` with
    /// expired_token and revokes the listens the rules no longer allow with `c`.
    func testExpiryMidConnectionRevokesAuthAndListens() async throws {
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.clockSkewSeconds = 0
            }
        ) { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            let token = try await testToken(uid: "alice", now: clock.now, ttlSeconds: 1)
            try await client.expectOK("auth", .object(["cred": .string(token)]))
            try await client.expectOK("q", #"{"p":"/users/alice","h":""}"#)
            // A tagged listen too: its revocation must name its query, or the SDK finds no listen
            // to drop (it looks revoked listens up by path and query).
            let query = #"{"l":5,"vf":"l","i":".key"}"#
            try await client.expectOK("q", #"{"p":"/users/alice/items","q":\#(query),"t":4,"h":""}"#)
            clock.now += 3000
            var revokedAuth = false
            var revokedDefault = false
            var revokedTagged = false
            let deadline = Date().addingTimeInterval(10)
            while !(revokedAuth && revokedDefault && revokedTagged), Date() < deadline {
                let push = try await client.nextPush(timeout: max(0.1, deadline.timeIntervalSinceNow))
                if push.action == "ac" {
                    XCTAssertEqual(push.body["s"], "expired_token", "\(push)")
                    revokedAuth = true
                }
                if push.action == "c", canonicalWirePath(push.path) == "/users/alice" {
                    XCTAssertNil(push.body["q"], "the default listen's revocation names no query: \(push)")
                    revokedDefault = true
                }
                if push.action == "c", canonicalWirePath(push.path) == "/users/alice/items" {
                    XCTAssertEqual(push.body["q"].map(normalised), .array([normalised(json(query))]), "\(push)")
                    revokedTagged = true
                }
            }
            XCTAssertTrue(revokedAuth && revokedDefault && revokedTagged, "pushes: \(client.pushLog)")
            let get = try await client.request("g", #"{"p":"/users/alice","q":{}}"#)
            XCTAssertEqual(get.response.status, "permission_denied")
            await client.close()
        }
    }

    /// A frame that is not JSON, or JSON that is not an envelope: a control `e`, and the
    /// connection goes on.
    func testMalformedFramesGetAControlErrorAndTheConnectionGoesOn() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            for bad in ["{not json", #"{"t":"x","d":{}}"#, "[1,2,3]", #"{"t":"d"}"#, "\"text\""] {
                let control = try await client.nextControlAfter { try await client.sendRawFrame(bad) }
                XCTAssertEqual(control.type, "e", "for \(bad)")
                XCTAssertNotNil(control.data.stringValue, "for \(bad): \(control.data)")
                try await client.stats()
            }
            // A count frame followed by pieces that do not make JSON: the same.
            let control = try await client.nextControlAfter {
                try await client.sendRawFrame("2")
                try await client.sendRawFrame(#"{"t":"d","#)
                try await client.sendRawFrame("oops")
            }
            XCTAssertEqual(control.type, "e")
            try await client.stats()
            XCTAssertFalse(client.isClosed)
            await client.close()
        }
    }

    /// Count frames from the client: a count of 1, and a message cut in the middle of a token,
    /// are read as one message each.
    func testCountPrefixedMessagesFromTheClient() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            var r = client.takeRequestNumber()
            try await client.sendRawFrame("1")
            try await client.sendRawFrame(#"{"t":"d","d":{"r":\#(r),"a":"p","b":{"p":"/c","d":"one"}}}"#)
            let one = try await client.response(for: r)
            XCTAssertEqual(one.status, "ok")
            r = client.takeRequestNumber()
            let text = #"{"t":"d","d":{"r":\#(r),"a":"p","b":{"p":"/c","d":"two pieces"}}}"#
            let cut = text.index(text.startIndex, offsetBy: 35)
            for frame in ["2", String(text[..<cut]), String(text[cut...])] { try await client.sendRawFrame(frame) }
            let response = try await client.response(for: r)
            XCTAssertEqual(response.status, "ok")
            let stored = try await client.expectOK("g", #"{"p":"/c","q":{}}"#)
            XCTAssertEqual(stored.response.data, "two pieces")
            // Inside a counted message a piece that reads "0" is a piece, not a keepalive.
            r = client.takeRequestNumber()
            let head = #"{"t":"d","d":{"r":\#(r),"a":"p","b":{"p":"/c","d":"#
            for frame in ["3", head, "0", "}}}"] { try await client.sendRawFrame(frame) }
            let zero = try await client.response(for: r)
            XCTAssertEqual(zero.status, "ok")
            let stored0 = try await client.expectOK("g", #"{"p":"/c","q":{}}"#)
            XCTAssertEqual(stored0.response.data, .int(0))
            await client.close()
        }
    }

    /// Data the server refuses (a key with a forbidden character) is answered with an error
    /// status and a message; nothing is written and the connection goes on.
    func testInvalidDataIsRefusedWithAMessage() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            for body in [#"{"p":"/bad","d":{"a.b":1}}"#, #"{"p":"/bad/a#b","d":1}"#] {
                let exchange = try await client.request("p", body)
                XCTAssertNotEqual(exchange.response.status, "ok", body)
                XCTAssertFalse(exchange.response.data.stringValue?.isEmpty ?? true, "\(exchange.response)")
            }
            XCTAssertEqual(try restGet(port, "/bad"), .null)
            try await client.stats()
            await client.close()
        }
    }

    /// Requests with bad bodies (no path, a bad path, a bad query object, a missing credential)
    /// are answered with an error status and a message for their `r`; the connection goes on
    /// and no listen is left behind.
    func testBadRequestBodiesAreRefusedWithAStatus() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            for (action, body) in [
                ("q", #"{"h":""}"#),
                ("q", #"{"p":"/a.b","h":""}"#),
                ("q", #"{"p":"/x","q":{"l":-1,"vf":"l"},"t":1,"h":""}"#),
                ("q", #"{"p":"/x","q":"not an object","t":3,"h":""}"#),
                ("m", #"{"p":"/x","d":5}"#),
                ("auth", #"{}"#),
                ("p", #""just a string""#),
            ] {
                let exchange = try await client.request(action, body)
                XCTAssertNotEqual(exchange.response.status, "ok", "\(action) \(body): \(exchange)")
                XCTAssertNotNil(exchange.response.data.stringValue, "\(action) \(body): \(exchange)")
                XCTAssertEqual(exchange.pushesBefore, [], "\(action) \(body)")
            }
            try await client.stats()
            try await client.expectOK("p", #"{"p":"/x","d":{"a":1}}"#)
            try await client.expectSilence("no refused listen is live")
            await client.close()
        }
    }

    /// An unknown action is answered bad_request for its `r`; the connection goes on.
    func testUnknownActionIsABadRequest() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            let exchange = try await client.request("frobnicate", #"{"p":"/x"}"#)
            XCTAssertEqual(exchange.response.status, "bad_request")
            XCTAssertTrue(
                exchange.response.data.stringValue?.contains("unknown action") ?? false, "\(exchange.response)")
            try await client.stats()
            await client.close()
        }
    }

    /// A message over maxMessageBytes is answered too_large for its `r` (read from its start),
    /// nothing is written, and the connection goes on, in one frame and split alike.
    func testMessageOverTheLimitIsTooLarge() async throws {
        try await withLiveServer(setting: \.maxMessageBytes, to: 4096) { server in
            let port = server.httpPort ?? 0
            let client = try await FirebaseWireClient(port: port)
            for size in [10_000, 50_000] {
                let r = client.takeRequestNumber()
                let value = String(repeating: "y", count: size)
                try await client.send(text: #"{"t":"d","d":{"r":\#(r),"a":"p","b":{"p":"/huge","d":"\#(value)"}}}"#)
                let response = try await client.response(for: r)
                XCTAssertEqual(response.status, "too_large", "\(size) bytes: \(response)")
                try await client.stats()
            }
            // With `r` after the data it cannot be read from the start: a control error instead.
            let late = client.takeRequestNumber()
            let value = String(repeating: "y", count: 10_000)
            try await client.send(text: #"{"t":"d","d":{"a":"p","b":{"p":"/huge","d":"\#(value)"},"r":\#(late)}}"#)
            let control = try await client.nextControl()
            XCTAssertEqual(control.type, "e", "\(control)")
            try await client.stats()
            XCTAssertEqual(try restGet(port, "/huge"), .null)
            try await client.expectOK("p", #"{"p":"/small","d":1}"#)
            await client.close()
        }
    }

    /// A client that stops reading while the server has more and more to push is closed as
    /// a slow consumer (WebSocket code 1008 naming maxOutboundBytes, when the close frame gets
    /// through); the writer is not held up.
    func testSlowConsumerIsClosed() async throws {
        try await withLiveServer(setting: \.maxOutboundBytes, to: 256 * 1024) { server in
            let port = server.httpPort ?? 0
            let slow = try await FirebaseWireClient(port: port)
            try await slow.expectOK("q", #"{"p":"/flood","h":""}"#)
            try await slow.setReading(false)
            let writer = try await FirebaseWireClient(port: port)
            let chunk = String(repeating: "z", count: 60_000)
            for i in 0..<200 {
                try await writer.expectOK("p", .object(["p": .string("/flood/\(i)"), "d": .string(chunk)]))
            }
            try await slow.setReading(true)
            let closed = await slow.waitForClose(timeout: 20)
            XCTAssertTrue(closed, "the slow consumer is still connected")
            if let frame = slow.closeFrame {
                XCTAssertEqual(frame.code, 1008)
                XCTAssertTrue(frame.reason.contains("maxOutboundBytes"), frame.reason)
            }
            try await writer.stats()
            await writer.close()
        }
    }

    /// A binary frame closes the connection with WebSocket code 1003.
    func testBinaryFrameClosesWith1003() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(port: server.httpPort ?? 0)
            try await client.sendBinaryFrame([0x7B, 0x7D])
            let closed = await client.waitForClose(timeout: 10)
            XCTAssertTrue(closed)
            XCTAssertEqual(client.closeFrame?.code, 1003)
        }
    }

    /// An unknown database when databases are not created on first use: the shutdown control
    /// `s` with a reason, then the server closes. Read as raw bytes to the end of the stream, so
    /// that what the server wrote before closing is all seen.
    func testUnknownDatabaseGetsShutdown() async throws {
        try await withLiveServer(setting: \.databases.autoCreate, to: false) { server in
            let bytes = try rawUpgrade(
                port: server.httpPort ?? 0, target: FirebaseWireClient.sdkTarget(ns: "nosuchdb"))
            let text = String(decoding: bytes, as: UTF8.self)
            XCTAssertTrue(text.hasPrefix("HTTP/1.1 101"), text)
            let separator = Array("\r\n\r\n".utf8)
            guard let end = (0..<bytes.count).first(where: { bytes[$0...].starts(with: separator) }) else {
                return XCTFail(text)
            }
            let frames = serverFrames(Array(bytes[(end + 4)...]))
            XCTAssertEqual(frames.first?.opcode, 1, "a text frame first: \(frames)")
            let control = json(String(decoding: frames.first?.payload ?? [], as: UTF8.self))
            XCTAssertEqual(control["t"], "c")
            XCTAssertEqual(control["d"]?["t"], "s", "\(control)")
            XCTAssertFalse(control["d"]?["d"]?.stringValue?.isEmpty ?? true, "\(control)")
        }
    }

    /// ns= names the database: writes through one database are not seen in another.
    func testNamespaceSelectsTheDatabase() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let one = try await FirebaseWireClient(port: port, target: FirebaseWireClient.sdkTarget(ns: "one"))
            let other = try await FirebaseWireClient(port: port, target: FirebaseWireClient.sdkTarget(ns: "other"))
            try await one.expectOK("p", #"{"p":"/x","d":"in one"}"#)
            let seen = try await other.expectOK("g", #"{"p":"/x","q":{}}"#)
            XCTAssertEqual(seen.response.data, .null)
            let back = try await one.expectOK("g", #"{"p":"/x","q":{}}"#)
            XCTAssertEqual(back.response.data, "in one")
            await one.close()
            await other.close()
        }
    }

    /// A host `<name>.localhost` names the database as ns= does.
    func testHostNamesTheDatabase() async throws {
        try await withLiveServer { server in
            let port = server.httpPort ?? 0
            let byName = try await FirebaseWireClient(port: port, target: FirebaseWireClient.sdkTarget(ns: "books"))
            try await byName.expectOK("p", #"{"p":"/title","d":"Dune"}"#)
            let byHost = try await FirebaseWireClient(port: port, hostHeader: "books.localhost:\(port)")
            XCTAssertEqual(byHost.hello["h"], .string("books.localhost:\(port)"))
            let title = try await byHost.expectOK("g", #"{"p":"/title","q":{}}"#)
            XCTAssertEqual(title.response.data, "Dune")
            let plain = try await FirebaseWireClient(port: port)
            let none = try await plain.expectOK("g", #"{"p":"/title","q":{}}"#)
            XCTAssertEqual(none.response.data, .null, "the default database is another one")
            await byName.close()
            await byHost.close()
            await plain.close()
        }
    }

    /// Browsers send their page's Origin with the upgrade: a loopback page may use an open
    /// server, and under rules any page may (the rules decide), as for REST.
    func testBrowserOrigins() async throws {
        try await withLiveServer { server in
            let client = try await FirebaseWireClient(
                port: server.httpPort ?? 0, headers: [("Origin", "http://127.0.0.1:5173")])
            try await client.stats()
            await client.close()
            do {
                let foreign = try await FirebaseWireClient(
                    port: server.httpPort ?? 0, headers: [("Origin", "https://elsewhere.example")])
                XCTFail("an open server let a foreign page in: \(foreign.hello)")
                await foreign.close()
            } catch {
                XCTAssertTrue("\(error)".contains("refused the WebSocket upgrade"), "\(error)")
            }
        }
        let rulesFile = try temporaryFile(#"{"rules":{".read":true,".write":false}}"#)
        try await withSecureServer(secureConfiguration { $0.rulesFile = rulesFile }) { server in
            let client = try await FirebaseWireClient(
                port: server.httpPort ?? 0, headers: [("Origin", "https://app.example")])
            try await client.stats()
            try await client.expectOK("g", #"{"p":"/","q":{}}"#)
            await client.close()
        }
    }

    /// With TLS configured the endpoint is wss:// on the HTTP listener.
    func testSecureWebSocket() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
            }
        ) { server in
            let client = try await FirebaseWireClient(
                port: server.httpPort ?? 0, tls: (pki.path("ca.crt"), "localhost"))
            XCTAssertEqual(client.hello["v"], "5")
            try await client.stats()
            try await client.expectOK("p", #"{"p":"/t","d":"secret"}"#)
            let get = try await client.expectOK("g", #"{"p":"/t","q":{}}"#)
            XCTAssertEqual(get.response.data, "secret")
            await client.close()
        }
    }
}

extension FirebaseWireClient {
    /// Runs `send`, then returns the next message, which must be a control message.
    func nextControlAfter(_ send: () async throws -> Void) async throws -> (type: String, data: JSONValue) {
        try await send()
        return try await nextControl()
    }
}

/// Sends a WebSocket upgrade for `target` on a plain socket and returns every byte the server
/// sends until it closes (at most 10 s).
func rawUpgrade(port: Int, target: String) throws -> [UInt8] {
    let fd = try connectLoopback(port: port)
    defer { Glibc.close(fd) }
    let request = HTTPTestClient.requestText(
        "GET", target,
        headers: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ])
    let bytes = Array(request.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
        throw TestClient.Failure(description: "send() failed")
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    let deadline = Date().addingTimeInterval(10)
    while deadline.timeIntervalSinceNow > 0 {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, 100) > 0 else { continue }
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return received }
        received += chunk[0..<n]
    }
    throw TestClient.Failure(description: "the server did not close within 10 s")
}

/// The unmasked frames a server sent: opcode and payload (short and 16-bit lengths).
func serverFrames(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
    var frames: [(opcode: UInt8, payload: [UInt8])] = []
    var i = 0
    while i + 2 <= bytes.count {
        let opcode = bytes[i] & 0x0F
        var length = Int(bytes[i + 1] & 0x7F)
        i += 2
        if length == 126, i + 2 <= bytes.count {
            length = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            i += 2
        }
        guard i + length <= bytes.count else { break }
        frames.append((opcode, Array(bytes[i..<i + length])))
        i += length
    }
    return frames
}
