import Foundation
import HearthCore
import HearthJSON
import HearthServer
import XCTest

/// Many clients, pipelining, and graceful shutdown.
final class ConcurrencyTests: XCTestCase {
    func testTwentyClientsIncrementOneCounterExactly() async throws {
        try await withLiveServer { server in
            let port = server.port
            let perClient = 200
            try concurrently(20) { _ in
                let c = try TestClient(port: port)
                for _ in 0..<perClient {
                    let response = try c.request(#"{"op":"set","path":"/counter","value":{".sv":{"increment":1}}}"#)
                    guard response["ok"] == .bool(true) else {
                        throw TestClient.Failure(description: response.jsonString)
                    }
                }
            }
            let c = try TestClient(port: port)
            let result = try c.request(#"{"op":"get","path":"/counter"}"#)
            XCTAssertEqual(result["value"], .int(Int64(20 * perClient)))
            XCTAssertEqual(result["rev"], .int(Int64(20 * perClient)))
        }
    }

    func testThousandsOfPipelinedRequestsAreAnsweredInOrder() async throws {
        try await withLiveServer { server in
            let c = try TestClient(port: server.port)
            let count = 5000
            var lines = ""
            for i in 0..<count {
                switch i % 4 {
                case 0: lines += #"{"op":"set","id":\#(i),"path":"/items/i\#(i)","value":\#(i)}"# + "\n"
                case 1: lines += #"{"op":"get","id":\#(i),"path":"/items/i\#(i - 1)"}"# + "\n"
                case 2: lines += "garbage \(i)\n"
                default: lines += #"{"op":"ping","id":\#(i)}"# + "\n"
                }
            }
            try c.sendRaw(Array(lines.utf8))
            var rev: Int64 = 0
            for i in 0..<count {
                let response = try c.readResponse()
                switch i % 4 {
                case 0:
                    XCTAssertEqual(response["id"], .int(Int64(i)))
                    let r = try XCTUnwrap(response["rev"]?.int64Value)
                    XCTAssertGreaterThan(r, rev)
                    rev = r
                case 1:
                    XCTAssertEqual(response["id"], .int(Int64(i)))
                    XCTAssertEqual(response["value"], .int(Int64(i - 1)))
                case 2:
                    XCTAssertEqual(response.errorCode, "bad_request")
                default:
                    XCTAssertEqual(response["id"], .int(Int64(i)))
                }
            }
            XCTAssertEqual(rev, Int64(count / 4))
        }
    }

    func testGracefulShutdownSendsGoawayAndAnswersInFlight() async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        let c = try TestClient(port: server.port)
        let watcher = try TestClient(port: server.port)
        try c.request(#"{"op":"onDisconnect","action":"set","path":"/bye","value":true}"#)
        var lines = ""
        for i in 0..<2000 { lines += #"{"op":"set","id":\#(i),"path":"/n","value":\#(i)}"# + "\n" }
        try c.sendRaw(Array(lines.utf8))
        _ = try c.readResponse()
        await server.shutdown()
        var lastAnswered: Int64 = 0
        var sawGoaway = false
        while let line = try? c.readJSON(timeout: 5) {
            if line["event"] == .string("goaway") { sawGoaway = true }
            if line["ok"] == .bool(true), let id = line["id"]?.int64Value {
                XCTAssertEqual(id, lastAnswered + 1, "answers must be contiguous")
                lastAnswered = id
            }
        }
        XCTAssertTrue(sawGoaway)
        XCTAssertTrue(watcher.waitForClose())
        // Every write the server applied was answered: the stored value is the last answer's.
        let final = try await server.snapshot()
        XCTAssertEqual(final.root.child(Key("n")).leafValue, .number(.int(lastAnswered)))
        XCTAssertEqual(final.root.child(Key("bye")).leafValue, .bool(true), "onDisconnect ran at shutdown")

        // A restart on the same directory recovers exactly that state.
        let restarted = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        let recovered = try await restarted.snapshot()
        XCTAssertEqual(recovered.root, final.root)
        XCTAssertEqual(recovered.rev, final.rev)
        await restarted.shutdown()
    }
}
