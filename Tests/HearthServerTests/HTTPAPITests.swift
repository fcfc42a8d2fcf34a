import Foundation
import HearthJSON
import HearthServer
import XCTest

/// The HTTP API (docs/REST.md) against the real server over real sockets.
final class HTTPAPITests: XCTestCase {
    private func http(_ server: HearthServer) throws -> HTTPTestClient {
        try HTTPTestClient(port: server.httpPort ?? 0)
    }

    func testMethodsReadAndWriteOneDatabase() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            let put = try client.request(
                "PUT", "/rooms/lobby.json", body: #"{"topic":"fossils","members":{"ada":true}}"#)
            XCTAssertEqual(put.status, 200)
            XCTAssertEqual(put.json, json(#"{"members":{"ada":true},"topic":"fossils"}"#))
            XCTAssertEqual(put.header("Content-Type"), "application/json; charset=utf-8")
            XCTAssertEqual(put.header("Access-Control-Allow-Origin"), "*")
            XCTAssertEqual(put.header("Cache-Control"), "no-cache")
            let putRev = try XCTUnwrap(put.header("X-Hearth-Rev").flatMap { UInt64($0) })

            let get = try client.request("GET", "/rooms/lobby/topic.json")
            XCTAssertEqual(get.status, 200)
            XCTAssertEqual(get.text, #""fossils""#)
            XCTAssertEqual(get.header("X-Hearth-Rev"), "\(putRev)")

            let patch = try client.request("PATCH", "/rooms/lobby.json", body: #"{"topic":"bones","members/bob":true}"#)
            XCTAssertEqual(patch.status, 200)
            XCTAssertEqual(patch.json, json(#"{"topic":"bones","members/bob":true}"#))
            XCTAssertEqual(patch.header("X-Hearth-Rev"), "\(putRev + 1)")

            let post = try client.request("POST", "/rooms/lobby/messages.json", body: #"{"text":"hi"}"#)
            XCTAssertEqual(post.status, 200)
            guard case .string(let name)? = post.json["name"] else { return XCTFail("no name in \(post.text)") }
            XCTAssertEqual(name.count, 20)
            XCTAssertEqual(try client.request("GET", "/rooms/lobby/messages/\(name)/text.json").text, #""hi""#)

            // The line protocol sees the same data, at the same revision.
            let tcp = try TestClient(port: server.port)
            let read = try tcp.request(#"{"id":1,"op":"get","path":"/rooms/lobby/members"}"#)
            XCTAssertEqual(read["value"], json(#"{"ada":true,"bob":true}"#))

            let delete = try client.request("DELETE", "/rooms/lobby/members.json")
            XCTAssertEqual(delete.status, 200)
            XCTAssertEqual(delete.text, "null")
            XCTAssertEqual(try client.request("GET", "/rooms/lobby/members.json").text, "null")
            XCTAssertEqual(try client.request("GET", "/nothing/here.json").text, "null")
            XCTAssertEqual(try client.request("GET", "/.info/connected.json").text, "null")

            // Server values resolve on the engine; the answer is the value as stored.
            let stamped = try client.request("PUT", "/stamp.json", body: #"{".sv":"timestamp"}"#)
            guard case .int(let time) = stamped.json else { return XCTFail("not a timestamp: \(stamped.text)") }
            XCTAssertGreaterThan(time, 1_600_000_000_000)
            _ = try client.request("PUT", "/count.json", body: "5")
            XCTAssertEqual(try client.request("PUT", "/count.json", body: #"{".sv":{"increment":2}}"#).text, "7")
        }
    }

    func testOutputFormatsAndPrintOptions() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            _ = try client.request("PUT", "/list.json", body: #"["a","b",null,"d"]"#)
            XCTAssertEqual(try client.request("GET", "/list.json").text, #"["a","b",null,"d"]"#)
            _ = try client.request("PUT", "/sparse.json", body: #"{"0":"a","5":"f"}"#)
            XCTAssertEqual(try client.request("GET", "/sparse.json").text, #"{"0":"a","5":"f"}"#)
            _ = try client.request("PUT", "/holes.json", body: #"{"0":"a","2":"c"}"#)
            XCTAssertEqual(try client.request("GET", "/holes.json").text, #"["a",null,"c"]"#)
            XCTAssertEqual(try client.request("GET", "/holes.json?format=export").text, #"{"0":"a","2":"c"}"#)

            _ = try client.request("PUT", "/p.json", body: #"{"a":{".value":1,".priority":5},".priority":"x"}"#)
            XCTAssertEqual(try client.request("GET", "/p.json").text, #"{"a":1}"#)
            XCTAssertEqual(
                try client.request("GET", "/p.json?format=export").json,
                json(#"{"a":{".value":1,".priority":5},".priority":"x"}"#))
            XCTAssertEqual(try client.request("GET", "/p/.priority.json").text, #""x""#)
            XCTAssertEqual(try client.request("PUT", "/p/a/.priority.json", body: "7").text, "7")
            XCTAssertEqual(try client.request("GET", "/p/a/.priority.json").text, "7")

            _ = try client.request("PUT", "/deep.json", body: #"{"x":{"y":1},"z":2}"#)
            XCTAssertEqual(try client.request("GET", "/deep.json?shallow=true").json, json(#"{"x":true,"z":true}"#))
            XCTAssertEqual(try client.request("GET", "/deep/z.json?shallow=true").text, "2")

            let silent = try client.request("PUT", "/deep/z.json?print=silent", body: "3")
            XCTAssertEqual(silent.status, 204)
            XCTAssertTrue(silent.body.isEmpty)
            let pretty = try client.request("GET", "/deep.json?print=pretty")
            XCTAssertTrue(pretty.text.contains("\n"), pretty.text)
            XCTAssertEqual(pretty.json, json(#"{"x":{"y":1},"z":3}"#))

            let jsonp = try client.request("GET", "/deep/z.json?callback=app.got")
            XCTAssertEqual(jsonp.text, "app.got(3);")
            XCTAssertEqual(jsonp.header("Content-Type"), "application/javascript; charset=utf-8")
            let download = try client.request("GET", "/deep.json?download=backup.json")
            XCTAssertEqual(download.header("Content-Disposition"), #"attachment; filename="backup.json""#)

            let head = try client.request("HEAD", "/deep.json")
            XCTAssertEqual(head.status, 200)
            XCTAssertEqual(head.header("Content-Length"), "\(#"{"x":{"y":1},"z":3}"#.utf8.count)")
            // The connection is still in step after a HEAD.
            XCTAssertEqual(try client.request("GET", "/deep/z.json").text, "3")
        }
    }

    func testErrorsHaveFirebaseStatusesAndBodies() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            func expect(
                _ status: Int, _ method: String, _ target: String, body: String? = nil,
                headers: [(String, String)] = [],
                contains text: String, line: UInt = #line
            ) throws {
                let response = try client.request(method, target, body: body, headers: headers)
                XCTAssertEqual(response.status, status, response.text, line: line)
                XCTAssertTrue(response.error?.contains(text) == true, "\(response.text)", line: line)
                if case .object(let members) = response.json { XCTAssertEqual(members.count, 1, line: line) }
            }
            try expect(
                400, "PUT", "/a.json", body: "{nope",
                contains: "Invalid data; couldn't parse JSON object, array, or value.")
            try expect(400, "PUT", "/a.json", body: "", contains: "Invalid data")
            try expect(400, "PUT", "/a%24b.json", body: "1", contains: "invalid")
            try expect(400, "PUT", "/a.json", body: #"{"b.c":1}"#, contains: "b.c")
            try expect(400, "PUT", "/.info/x.json", body: "1", contains: ".info")
            try expect(404, "GET", "/a", contains: "Not Found")
            try expect(404, "GET", "/.settings/other.json", contains: "Not Found")
            try expect(
                400, "GET", "/a.json?limitToFirst=2",
                contains: "orderBy must be defined when other query parameters are defined")
            try expect(400, "GET", "/a.json?orderBy=height", contains: "orderBy must be a valid JSON encoded path")
            try expect(
                400, "GET", "/a.json?orderBy=%22h%22&startAt=%7B%7D",
                contains: "Constraint index field must be a JSON primitive")
            try expect(400, "GET", "/a.json?orderBy=%22h%22&limitToFirst=-1", contains: "limitToFirst")
            try expect(400, "GET", "/a.json?orderBy=%22h%22&limitToFirst=1&limitToLast=1", contains: "limit")
            try expect(400, "GET", "/a.json?shallow=true&orderBy=%22$key%22", contains: "shallow")
            try expect(400, "GET", "/a.json?print=loud", contains: "print")
            try expect(400, "GET", "/a.json?format=xml", contains: "format")
            try expect(400, "GET", "/a.json?timeout=20min", contains: "timeout")
            try expect(400, "GET", "/a.json?callback=1bad", contains: "callback")
            try expect(400, "PUT", "/a.json?orderBy=%22$key%22", body: "1", contains: "orderBy")
            try expect(400, "PUT", "/a.json?writeSizeLimit=huge", body: "1", contains: "writeSizeLimit")
            try expect(400, "GET", "/a.json", headers: [("if-match", "x")], contains: "if-match")
            try expect(400, "PATCH", "/a.json", body: "[1]", contains: "object")
            try expect(400, "PATCH", "/a.json", body: #"{"b":1,"b/c":2}"#, contains: "b")
            try expect(
                400, "POST", "/a.json", body: "1", headers: [("X-HTTP-Method-Override", "GET")], contains: "Override")

            let unknown = try client.request("PROPFIND", "/a.json")
            XCTAssertEqual(unknown.status, 405)
            XCTAssertEqual(unknown.header("Allow"), "GET, PUT, POST, PATCH, DELETE, OPTIONS, HEAD")
            XCTAssertNotNil(unknown.error)

            // A POST may stand for another method.
            let overridden = try client.request(
                "POST", "/o.json", body: #"{"a":1}"#, headers: [("X-HTTP-Method-Override", "PUT")])
            XCTAssertEqual(overridden.json, json(#"{"a":1}"#))
            let byParameter = try client.request("POST", "/o.json?x-http-method-override=DELETE", body: "")
            XCTAssertEqual(byParameter.text, "null")
            XCTAssertEqual(try client.request("GET", "/o.json").text, "null")
        }
    }

    func testBodiesOverTheLimitAre413() async throws {
        try await withLiveServer(setting: \.maxMessageBytes, to: 4096) { server in
            let client = try http(server)
            let big = "\"" + String(repeating: "x", count: 5000) + "\""
            let response = try client.request("PUT", "/big.json", body: big)
            XCTAssertEqual(response.status, 413)
            XCTAssertNotNil(response.error)
            XCTAssertTrue(client.waitForClose())
            XCTAssertEqual(try http(server).request("GET", "/big.json").text, "null")
        }
    }

    func testHeadsOver64KiBAre431() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            let response = try client.request(
                "GET", "/a.json", headers: [("X-Padding", String(repeating: "p", count: 70 * 1024))])
            XCTAssertEqual(response.status, 431)
            XCTAssertNotNil(response.error)
            XCTAssertTrue(client.waitForClose())
            XCTAssertEqual(try http(server).request("GET", "/a.json").status, 200)
        }
    }

    func testWellKnownAnswersSayHowToCacheThemOnce() async throws {
        try await withLiveServer { server in
            for path in ["health", "metrics", "stats"] {
                let answer = try http(server).request("GET", "/.well-known/hearth/\(path)")
                XCTAssertEqual(answer.status, 200)
                let cacheControl = answer.headers.filter { $0.0.lowercased() == "cache-control" }
                XCTAssertEqual(cacheControl.map(\.1), ["no-cache"], path)
            }
        }
    }

    func testCORSPreflight() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            // An open server allows pages from loopback (and its own, and allowedOrigins); the
            // answer names the origin it allows.
            let preflight = try client.request(
                "OPTIONS", "/anything.json",
                headers: [
                    ("Origin", "http://localhost:3000"), ("Access-Control-Request-Headers", "authorization, x-custom"),
                ])
            XCTAssertEqual(preflight.status, 200)
            XCTAssertTrue(preflight.body.isEmpty)
            XCTAssertEqual(preflight.header("Access-Control-Allow-Origin"), "http://localhost:3000")
            XCTAssertEqual(preflight.header("Vary"), "Origin")
            XCTAssertEqual(preflight.header("Access-Control-Allow-Methods"), "GET, PUT, POST, PATCH, DELETE, OPTIONS")
            XCTAssertEqual(preflight.header("Access-Control-Allow-Headers"), "authorization, x-custom")
            XCTAssertEqual(preflight.header("Access-Control-Max-Age"), "86400")
            let plain = try client.request("GET", "/anything.json")
            XCTAssertEqual(plain.header("Access-Control-Expose-Headers"), "ETag, X-Hearth-Rev, X-Hearth-Warning")
        }
    }

    func testETagsAndConditionalWrites() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            let empty = try client.request("GET", "/counter.json", headers: [("X-Firebase-ETag", "true")])
            XCTAssertEqual(empty.header("ETag"), "null_etag")
            XCTAssertNil(try client.request("GET", "/counter.json").header("ETag"))

            let created = try client.request("PUT", "/counter.json", body: "1", headers: [("if-match", "null_etag")])
            XCTAssertEqual(created.status, 200)
            XCTAssertEqual(created.text, "1")
            let etag = try XCTUnwrap(created.header("ETag"))
            XCTAssertNotEqual(etag, "null_etag")

            let current = try client.request("GET", "/counter.json", headers: [("X-Firebase-ETag", "true")])
            XCTAssertEqual(current.header("ETag"), etag)
            let notModified = try client.request("GET", "/counter.json", headers: [("if-none-match", etag)])
            XCTAssertEqual(notModified.status, 304)
            XCTAssertEqual(notModified.header("ETag"), etag)
            let modified = try client.request("GET", "/counter.json", headers: [("if-none-match", "stale")])
            XCTAssertEqual(modified.status, 200)
            XCTAssertEqual(modified.header("ETag"), etag)

            // A stale ETag writes nothing and answers 412 with what is there now.
            let conflict = try client.request("PUT", "/counter.json", body: "5", headers: [("if-match", "\"stale\"")])
            XCTAssertEqual(conflict.status, 412)
            XCTAssertEqual(conflict.text, "1")
            XCTAssertEqual(conflict.header("ETag"), etag)
            XCTAssertEqual(try client.request("GET", "/counter.json").text, "1")

            let quoted = try client.request("PUT", "/counter.json", body: "2", headers: [("if-match", "\"\(etag)\"")])
            XCTAssertEqual(quoted.status, 200)
            let next = try XCTUnwrap(quoted.header("ETag"))
            let wrongDelete = try client.request("DELETE", "/counter.json", headers: [("if-match", etag)])
            XCTAssertEqual(wrongDelete.status, 412)
            let delete = try client.request("DELETE", "/counter.json", headers: [("if-match", next)])
            XCTAssertEqual(delete.status, 200)
            XCTAssertEqual(delete.header("ETag"), "null_etag")
            XCTAssertEqual(try client.request("GET", "/counter.json").text, "null")

            // The line protocol's hash is the same ETag.
            _ = try client.request("PUT", "/h.json", body: #"{"a":{".value":1,".priority":2}}"#)
            let tcp = try TestClient(port: server.port)
            let hashed = try tcp.request(#"{"id":1,"op":"get","path":"/h","hash":true}"#)
            let restETag = try client.request("GET", "/h.json", headers: [("X-Firebase-ETag", "true")]).header("ETag")
            XCTAssertEqual(hashed["hash"], restETag.map { .string($0) })
        }
    }

    func testQueriesSelectWhatTheLineProtocolSelects() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            _ = try client.request(
                "PUT", "/dinosaurs.json",
                body:
                    #"{"bruhathkayosaurus":{"height":25},"lambeosaurus":{"height":2.1},"linhenykus":{"height":0.6},"pterodactyl":{"height":0.6},"stegosaurus":{"height":4}}"#
            )
            let tallest = try client.request("GET", #"/dinosaurs.json?orderBy="height"&limitToLast=2"#)
            XCTAssertEqual(tallest.status, 200)
            XCTAssertEqual(tallest.json, json(#"{"stegosaurus":{"height":4},"bruhathkayosaurus":{"height":25}}"#))
            XCTAssertTrue(tallest.header("X-Hearth-Warning")?.hasPrefix("index_not_defined") == true)

            let tied = try client.request(
                "GET", #"/dinosaurs.json?orderBy=%22height%22&startAt=0.6,%22pterodactyl%22&limitToFirst=2"#)
            XCTAssertEqual(tied.json, json(#"{"pterodactyl":{"height":0.6},"lambeosaurus":{"height":2.1}}"#))
            let byKey = try client.request(
                "GET", #"/dinosaurs.json?orderBy="$key"&startAfter="lambeosaurus"&endBefore="stegosaurus""#)
            XCTAssertEqual(byKey.json, json(#"{"linhenykus":{"height":0.6},"pterodactyl":{"height":0.6}}"#))
            // A space encoded as + in a value that is JSON only with the plus kept.
            _ = try client.request("PUT", "/scores.json", body: #"{"a":1,"b":2,"c":3}"#)
            XCTAssertEqual(
                try client.request("GET", #"/scores.json?orderBy="$value"&startAt=+2"#).json, json(#"{"b":2,"c":3}"#))
            XCTAssertEqual(
                try client.request("GET", #"/scores.json?orderBy="$value"&equalTo=9"#).text, "null")

            let tcp = try TestClient(port: server.port)
            let line = try tcp.request(
                #"{"id":1,"op":"get","path":"/dinosaurs","query":{"orderBy":"height","limitToLast":2}}"#)
            XCTAssertEqual(line["value"], tallest.json)
        }
    }

    func testStrictIndexesRefuseUndeclaredQueries() async throws {
        try await withLiveServer(setting: \.strictIndexes, to: true) { server in
            let response = try http(server).request("GET", #"/dinosaurs.json?orderBy="height"&limitToFirst=1"#)
            XCTAssertEqual(response.status, 400)
            XCTAssertEqual(
                response.error,
                #"Index not defined, add ".indexOn": "height", for path "/dinosaurs", to the rules"#)
        }
    }

    func testKeepAliveAndPipeliningAnswerInOrder() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            let requests =
                HTTPTestClient.requestText("PUT", "/seq.json", body: "1")
                + HTTPTestClient.requestText("GET", "/seq.json")
                + HTTPTestClient.requestText("PUT", "/seq.json", body: "{nope")
                + HTTPTestClient.requestText("PATCH", "/.json", body: #"{"seq":2}"#)
                + HTTPTestClient.requestText("GET", "/seq.json")
            try client.sendRaw(requests)
            XCTAssertEqual(try client.readResponse().text, "1")
            XCTAssertEqual(try client.readResponse().text, "1")
            XCTAssertEqual(try client.readResponse().status, 400)
            XCTAssertEqual(try client.readResponse().json, json(#"{"seq":2}"#))
            XCTAssertEqual(try client.readResponse().text, "2")

            // Chunked request bodies.
            try client.sendRaw(
                "PUT /chunked.json HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n"
            )
            XCTAssertEqual(try client.readResponse().json, json(#"{"a":1}"#))

            // HTTP/1.0: one answer, then the server closes.
            let old = try http(server)
            try old.sendRaw(HTTPTestClient.requestText("GET", "/seq.json", version: "HTTP/1.0"))
            XCTAssertEqual(try old.readResponse().text, "2")
            XCTAssertTrue(old.waitForClose())
        }
    }

    /// In open mode anyone may set the rules (as with Firebase's emulator); that ends open mode.
    func testRulesEndpointInOpenMode() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            XCTAssertEqual(try client.request("GET", "/.settings/rules.json").json, json(#"{"rules":{}}"#))
            let invalid = try client.request(
                "PUT", "/.settings/rules.json", body: #"{"rules":{".read":"auth.uid ==="}}"#)
            XCTAssertEqual(invalid.status, 400)
            XCTAssertNotNil(invalid.error)
            let rules = #"{"rules":{".read":true,".write":true,"scores":{".indexOn":"score"}}}"#
            let put = try client.request("PUT", "/.settings/rules.json?format=strict", body: rules)
            XCTAssertEqual(put.status, 200)
            XCTAssertEqual(put.json, json(#"{"status":"ok"}"#))
            let locked = try client.request("GET", "/.settings/rules.json?format=strict")
            XCTAssertEqual(locked.status, 401)
            XCTAssertEqual(locked.error, "Permission denied")
            XCTAssertEqual(try client.request("PUT", "/open.json", body: "1").status, 200)
            // The index the new rules declare is in force: no warning.
            let query = try client.request("GET", #"/scores.json?orderBy="score"&limitToFirst=1"#)
            XCTAssertEqual(query.status, 200)
            XCTAssertNil(query.header("X-Hearth-Warning"))
        }
    }

    /// `curl -d @rules.json` strips the file's line breaks, so its leading `//` comment swallows
    /// the whole document: the refusal says so and names `--data-binary`. The same file with its
    /// line breaks is accepted.
    func testARulesFileWithoutItsLineBreaksIsRefusedWithAHintToSendItAsIs() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            let file = "// Rules for the dinosaurs\n{\"rules\":{\".read\":true,\".write\":true}}\n"
            let flattened = file.replacingOccurrences(of: "\n", with: "")
            let refused = try client.request("PUT", "/.settings/rules.json", body: flattened)
            XCTAssertEqual(refused.status, 400, refused.text)
            XCTAssertTrue(refused.error?.contains("--data-binary") == true, refused.text)
            // A plain syntax error, without a comment that ran to the end, gets no such hint.
            let broken = try client.request("PUT", "/.settings/rules.json", body: #"{"rules":{".read":true"#)
            XCTAssertEqual(broken.status, 400, broken.text)
            XCTAssertFalse(broken.text.contains("--data-binary"), broken.text)
            let accepted = try client.request("PUT", "/.settings/rules.json", body: file)
            XCTAssertEqual(accepted.status, 200, accepted.text)
        }
    }

    func testHealthMetricsAndStatsOnTheSameListener() async throws {
        try await withLiveServer { server in
            let client = try http(server)
            let health = try client.request("GET", "/.well-known/hearth/health")
            XCTAssertEqual(health.status, 200)
            XCTAssertEqual(health.json["status"], "ok")

            let stream = try http(server)
            XCTAssertEqual(try stream.openStream("/watched.json").status, 200)
            _ = try stream.nextEvent()
            for i in 0..<3 { _ = try client.request("PUT", "/watched/n.json", body: "\(i)") }
            let metrics = try client.request("GET", "/.well-known/hearth/metrics")
            XCTAssertEqual(metrics.status, 200)
            XCTAssertEqual(metrics.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
            let lines = metrics.text.split(separator: "\n").map(String.init)
            XCTAssertTrue(lines.contains("hearth_sse_streams 1.0"), metrics.text)
            XCTAssertTrue(lines.contains("hearth_writes_total 3"), metrics.text)
            XCTAssertTrue(lines.contains { $0.hasPrefix("hearth_connections{") && $0.contains("http") }, metrics.text)

            let stats = try client.request("GET", "/.well-known/hearth/stats")
            XCTAssertEqual(stats.status, 200)
            XCTAssertNotNil(stats.json["rev"], stats.text)
            XCTAssertEqual(try client.request("GET", "/.well-known/hearth/nothing").status, 404)
            XCTAssertEqual(try client.request("PUT", "/.well-known/hearth/health", body: "1").status, 405)
        }
    }
}
