import HearthAuth
import NIOCore
import XCTest

@testable import HearthServer

/// Admission under the connection limits, as both transports take it: counted in, refused with
/// the reason, counted out once.
final class ConnectionAdmissionTests: XCTestCase {
    func security(_ adjust: (inout ProtectionLimits) -> Void) async throws -> SecurityState {
        var limits = ProtectionLimits()
        adjust(&limits)
        let verifier = try await TokenVerifier.load(TokenVerifier.Settings()) { _ in "" }
        return SecurityState(limits: limits, verifier: verifier, open: true, helloWarning: nil)
    }

    func testCountsInUntilTheLimitThenRefusesWithTheReason() async throws {
        let security = try await security { $0.maxConnections = 2 }
        let address = try SocketAddress(ipAddress: "192.0.2.7", port: 4000)
        var first = ConnectionAdmission()
        var second = ConnectionAdmission()
        var third = ConnectionAdmission()
        XCTAssertNil(first.admit(address, security: security).refusal)
        XCTAssertEqual(first.remoteAddress, "192.0.2.7")
        XCTAssertTrue(first.isCounted)
        XCTAssertNil(second.admit(address, security: security).refusal)
        let refused = third.admit(address, security: security)
        XCTAssertEqual(refused.refusal?.contains("maxConnections"), true)
        XCTAssertFalse(third.isCounted)
        XCTAssertFalse(third.release(from: security), "a refused connection was never counted")
        XCTAssertTrue(first.release(from: security))
        XCTAssertFalse(first.release(from: security), "counted out once")
        XCTAssertNil(third.admit(address, security: security).refusal, "room again")
    }

    func testPerAddressLimitSparesLoopbackAndPeersWithoutAnAddress() async throws {
        let security = try await security { $0.maxConnectionsPerAddress = 1 }
        var remote = [ConnectionAdmission(), ConnectionAdmission()]
        let address = try SocketAddress(ipAddress: "192.0.2.8", port: 4000)
        XCTAssertNil(remote[0].admit(address, security: security).refusal)
        XCTAssertEqual(remote[1].admit(address, security: security).refusal?.contains("192.0.2.8"), true)
        var local = [ConnectionAdmission(), ConnectionAdmission()]
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 4000)
        XCTAssertNil(local[0].admit(loopback, security: security).refusal)
        XCTAssertNil(local[1].admit(loopback, security: security).refusal)
        var unix = [ConnectionAdmission(), ConnectionAdmission()]
        XCTAssertNil(unix[0].admit(nil, security: security).refusal)
        XCTAssertNil(unix[1].admit(nil, security: security).refusal)
        XCTAssertEqual(unix[1].remoteAddress, "?")
    }

    func testWriteLimitsComeWithTheAdmission() async throws {
        let limited = try await security { $0.maxWritesPerSecondPerConnection = 5 }
        var admission = ConnectionAdmission()
        XCTAssertNotNil(admission.admit(nil, security: limited).writeLimits)
        let unlimited = try await security {
            $0.maxWritesPerSecondPerConnection = 0
            $0.maxWritesPerSecondPerAddress = 0
        }
        var other = ConnectionAdmission()
        XCTAssertNil(other.admit(nil, security: unlimited).writeLimits)
    }
}
