import XCTest

@testable import HearthServer

/// The parts of `jwtPublicKeysURL`'s refresher that need no network: the URL and `max-age`.
final class JWKSRefresherTests: XCTestCase {
    func testRefreshIntervalFollowsMaxAgeWithinBounds() {
        XCTAssertEqual(
            JWKSRefresher.interval(cacheControl: ["public, max-age=19179, must-revalidate, no-transform"]),
            .seconds(3600))
        XCTAssertEqual(JWKSRefresher.interval(cacheControl: ["public, max-age=120"]), .seconds(120))
        XCTAssertEqual(JWKSRefresher.interval(cacheControl: ["no-cache", "MAX-AGE=600"]), .seconds(600))
        XCTAssertEqual(JWKSRefresher.interval(cacheControl: ["max-age=0"]), JWKSRefresher.shortestInterval)
        XCTAssertEqual(JWKSRefresher.interval(cacheControl: []), .seconds(3600))
        XCTAssertEqual(JWKSRefresher.interval(cacheControl: ["max-age=soon"]), .seconds(3600))
    }

    func testKeysURLs() throws {
        let google = try KeysURL(
            "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com", source: "t")
        XCTAssertTrue(google.secure)
        XCTAssertEqual(google.host, "www.googleapis.com")
        XCTAssertEqual(google.port, 443)
        XCTAssertEqual(google.target, "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")
        XCTAssertEqual(google.hostHeader, "www.googleapis.com")
        XCTAssertFalse(google.hostIsAddress)
        let local = try KeysURL("http://127.0.0.1:8081?x=1#frag", source: "t")
        XCTAssertFalse(local.secure)
        XCTAssertEqual(local.port, 8081)
        XCTAssertEqual(local.target, "/?x=1")
        XCTAssertEqual(local.hostHeader, "127.0.0.1:8081")
        XCTAssertTrue(local.hostIsAddress)
        let v6 = try KeysURL("http://[::1]:9/k", source: "t")
        XCTAssertEqual(v6.host, "::1")
        XCTAssertEqual(v6.hostHeader, "[::1]:9")
        for bad in [
            "ftp://x/y", "https://", "https://user:pw@host/", "http://host:0/", "http://host:x/", "http://a b/", "",
        ] {
            XCTAssertThrowsError(try KeysURL(bad, source: "t"), bad)
        }
    }
}
