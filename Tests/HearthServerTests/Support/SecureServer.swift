import Foundation
import HearthAuth
import HearthJSON
import HearthServer
import NIOConcurrencyHelpers
import XCTest

/// A clock tests can set: the server reads it for `now`, server timestamps and token times.
final class TestClock: Sendable {
    private let value = NIOLockedValueBox<Int64>(Int64(Date().timeIntervalSince1970 * 1000))

    var now: Int64 {
        get { value.withLockedValue { $0 } }
        set { value.withLockedValue { $0 = newValue } }
    }

    var read: @Sendable () -> Int64 { { self.now } }
}

/// The secrets the secure test servers use (test fixtures, never real secrets).
enum TestSecrets {
    static let admin = "test-admin-secret-0123456789"
    static let jwt = "test-jwt-secret-for-hs256-tokens"
}

/// A loopback configuration with an admin secret and an HS256 key (and whatever `modify` adds).
func secureConfiguration(_ modify: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.httpPort = 0
    configuration.dataDirectory = temporaryDataDirectory()
    configuration.fsync = .never
    configuration.tokens.adminSecrets = [TestSecrets.admin]
    configuration.tokens.jwtSecret = TestSecrets.jwt
    modify(&configuration)
    return configuration
}

/// Starts the real server with `configuration` (by default `secureConfiguration()`) on a free
/// loopback port for the duration of `body`.
func withSecureServer(
    clock: TestClock = TestClock(), _ configuration: ServerConfiguration = secureConfiguration(),
    _ body: (HearthServer) async throws -> Void
) async throws {
    defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
    let server = try await HearthServer.start(configuration: configuration, logger: quietLogger, clock: clock.read)
    do {
        try await body(server)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}

/// Writes `text` to a new temporary file and returns its path.
func temporaryFile(_ text: String, suffix: String = ".json") throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString)\(suffix)")
        .path
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// An HS256 token for `uid` signed with the test secret, valid around `now` (ms).
func testToken(
    uid: String, claims: JSONValue = .object([]), now: Int64, ttlSeconds: Int64 = 3600
) async throws
    -> String
{
    try await TokenMinter(secret: TestSecrets.jwt).mint(
        uid: uid, claims: claims, now: now / 1000, ttlSeconds: ttlSeconds)
}

extension TestClient {
    /// Authenticates with the admin secret.
    func authAdmin() throws {
        let response = try request(#"{"op":"auth","token":"\#(TestSecrets.admin)"}"#)
        guard response["ok"] == .bool(true) else { throw Failure(description: "admin auth failed: \(response)") }
    }

    /// Sends a request built as a JSON value.
    @discardableResult
    func request(_ value: JSONValue) throws -> JSONValue { try request(value.jsonString) }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// String literals as JSON strings, for building requests in tests.
    public init(stringLiteral value: String) { self = .string(value) }
}
