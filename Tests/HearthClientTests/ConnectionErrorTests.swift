import Foundation
import XCTest

@testable import HearthClient

/// A client tells "nothing listens there" from "no such host" and from a server that is up
/// (issue #16, item 1).
final class ConnectionErrorTests: XCTestCase {
    /// A loopback port nothing listens on: a server's, after it stopped.
    func freePort() async throws -> Int {
        let server = try await TestServer.start()
        await server.remove()
        return server.configuration.port
    }

    func testARefusedConnectionIsReportedAtOnce() async throws {
        let port = try await freePort()
        let db = Database(url: "hearth://127.0.0.1:\(port)")
        defer { db.goOffline() }
        do {
            try await db.waitForConnection()
            XCTFail("connected to a port nothing listens on")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .connectionRefused)
            XCTAssertEqual(error.message, "cannot connect to hearth://127.0.0.1:\(port): connection refused")
        }
        let last = await db.connectionError()
        XCTAssertEqual(last?.code, .connectionRefused)
    }

    func testAnUnknownHostIsNamed() async throws {
        let db = Database(url: "hearth://no-such-host.invalid:9000")
        defer { db.goOffline() }
        do {
            try await db.waitForConnection()
            XCTFail("connected to a host that does not exist")
        } catch let error as HearthError {
            XCTAssertEqual(error.code, .unknownHost, error.message)
            XCTAssertTrue(error.message.contains("\"no-such-host.invalid\""), error.message)
        }
    }

    func testWaitForConnectionReturnsOnceConnectedAndClearsTheError() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            try await db.waitForConnection()
            let error = await db.connectionError()
            XCTAssertNil(error)
            // Already connected: returns at once.
            try await db.waitForConnection()
        }
    }
}
