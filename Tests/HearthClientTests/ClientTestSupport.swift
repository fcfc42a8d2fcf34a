import Foundation
import HearthServer
import Logging
import NIOConcurrencyHelpers
import XCTest

@testable import HearthClient

/// A real server on 127.0.0.1 with a temporary data directory, which tests may restart on the
/// same port and directory.
final class TestServer: @unchecked Sendable {
    // Mutated only by the test that owns it, between awaits.
    private(set) var server: HearthServer
    let configuration: ServerConfiguration

    private init(server: HearthServer, configuration: ServerConfiguration) {
        self.server = server
        self.configuration = configuration
    }

    static func start(_ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-client-test-\(UUID().uuidString)").path
        configuration.fsync = .never
        configure(&configuration)
        let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
        configuration.port = server.port
        return TestServer(server: server, configuration: configuration)
    }

    var url: String { "hearth://127.0.0.1:\(configuration.port)" }

    func stop() async { await server.shutdown() }

    /// Starts a new server on the same port and data directory (after `stop()`).
    func restart() async throws {
        server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
    }

    func remove() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: configuration.dataDirectory)
    }

    /// A client of this server that reconnects quickly (tests restart servers).
    func client() -> Database {
        var configuration = Database.Configuration()
        configuration.reconnectMinDelay = .milliseconds(20)
        configuration.reconnectMaxDelay = .milliseconds(200)
        return Database(url: url, configuration: configuration)
    }
}

let quietLogger = Logger(label: "hearth-client-test") { _ in SwiftLogNoOpLogHandler() }

/// Runs `body` with a live server, removing it afterwards.
func withServer(
    configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestServer) async throws -> Void
) async throws {
    let server = try await TestServer.start(configure)
    do {
        try await body(server)
    } catch {
        await server.remove()
        throw error
    }
    await server.remove()
}

struct Timeout: Error, CustomStringConvertible {
    let description: String
}

/// Polls `condition` every 5 ms until it holds, failing after `seconds`.
func eventually(
    _ what: String, timeout seconds: Double = 5, _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(nanoseconds: 5_000_000)
    }
    throw Timeout(description: "timed out after \(seconds) s waiting for \(what)")
}

/// Collects what callbacks report, from any thread.
final class Recorder<T: Sendable>: Sendable {
    private let items = NIOLockedValueBox<[T]>([])

    func append(_ item: T) { items.withLockedValue { $0.append(item) } }

    var all: [T] { items.withLockedValue { $0 } }

    /// Waits until at least `count` items arrived and returns them all.
    @discardableResult
    func wait(for count: Int, timeout: Double = 5) async throws -> [T] {
        try await eventually("\(count) callbacks (have \(all.count))", timeout: timeout) { self.all.count >= count }
        return all
    }
}

/// Waits for a write's completion, as the async API would, but through the completion block.
func completion(_ start: (@escaping DatabaseReference.WriteCompletion) -> Void) async -> (any Error)? {
    await withCheckedContinuation { continuation in
        start { error, _ in continuation.resume(returning: error) }
    }
}

extension Error {
    var hearthCode: HearthError.Code? { (self as? HearthError)?.code }
}

/// `XCTAssertEqual` for a value that must be awaited.
func assertEqual<T: Equatable>(
    _ actual: @autoclosure () async throws -> T, _ expected: T, _ message: String = "",
    file: StaticString = #filePath, line: UInt = #line
) async rethrows {
    let value = try await actual()
    XCTAssertEqual(value, expected, message, file: file, line: line)
}
