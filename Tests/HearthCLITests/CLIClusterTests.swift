import Foundation
import XCTest

/// `hearth` with several addresses, and `hearth cluster …` against a server that is not part of
/// a cluster (the cluster's own tests run against a real cluster).
final class CLIClusterTests: XCTestCase {
    /// A loopback port nothing listens on: a server's, after it stopped.
    func deadPort() async throws -> Int {
        let server = try await CLIServer.start()
        let port = server.server.port
        await server.remove()
        return port
    }

    func testClusterCommandsOnAStandaloneServerFailAndSaySo() async throws {
        try await withCLIServer { server in
            let status = try hearth("cluster", "status", url: server.url)
            XCTAssertEqual(status.status, 1)
            XCTAssertEqual(status.stdout, "")
            XCTAssertEqual(
                status.stderr,
                "hearth: this server is not part of a cluster (it answered clusterStatus with bad_request: "
                    + "this server is not part of a cluster)\n")
            let json = try hearth("cluster", "status", "--json", url: server.url)
            XCTAssertEqual(json.status, 1)
            XCTAssertEqual(json.stdout, "")
            let failover = try hearth("cluster", "failover", "--to", "n2", url: server.url)
            XCTAssertEqual(failover.status, 1)
            XCTAssertEqual(failover.stdout, "")
            XCTAssertTrue(
                failover.stderr.hasPrefix("hearth: failover failed: this server is not part of a cluster"),
                failover.stderr)
        }
    }

    func testSeveralAddressesReachTheFirstServerThatAnswers() async throws {
        let dead = try await deadPort()
        try await withCLIServer { server in
            let url = "hearth://127.0.0.1:\(dead),127.0.0.1:\(server.server.port)"
            XCTAssertEqual(try hearth("set", "/a", "1", url: url).status, 0)
            let read = try hearth("get", "/a", url: url)
            XCTAssertEqual(read.status, 0, read.stderr)
            XCTAssertEqual(read.stdout, "1\n")
        }
        let other = try await deadPort()
        let refused = try hearth("get", "/", url: "hearth://127.0.0.1:\(dead),127.0.0.1:\(other)")
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(
            refused.stderr,
            "hearth: cannot connect to hearth://127.0.0.1:\(dead): connection refused; cannot connect to "
                + "hearth://127.0.0.1:\(other): connection refused (is hearthd running?)\n")
        let invalid = try hearth("get", "/", url: "hearth://127.0.0.1:1,,127.0.0.1:2")
        XCTAssertEqual(invalid.status, 2)
        XCTAssertTrue(invalid.stderr.contains("address 2 of 3 is empty"), invalid.stderr)
    }
}
