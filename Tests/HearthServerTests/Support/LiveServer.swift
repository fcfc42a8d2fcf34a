import HearthServer
import Logging
import XCTest

/// Starts the real server on 127.0.0.1 with a free port for the duration of `body`.
func withLiveServer(_ body: (HearthServer) async throws -> Void) async throws {
    try await withLiveServer(configure: { _ in }, body)
}

/// `withLiveServer` with one setting changed, e.g. `withLiveServer(setting: \.strictIndexes, to: true)`.
func withLiveServer<Value>(
    setting keyPath: WritableKeyPath<ServerConfiguration, Value>, to value: Value,
    _ body: (HearthServer) async throws -> Void
) async throws {
    try await withLiveServer(configure: { $0[keyPath: keyPath] = value }, body)
}

/// `withLiveServer` with the configuration changed by `configure`.
func withLiveServer(
    configure: (inout ServerConfiguration) -> Void, _ body: (HearthServer) async throws -> Void
) async throws {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.httpPort = 0
    configuration.dataDirectory = temporaryDataDirectory()
    configuration.fsync = .never
    configure(&configuration)
    defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
    let server = try await HearthServer.start(configuration: configuration, logger: quietLogger)
    do {
        try await body(server)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}

/// A fresh data directory path under the system's temporary directory.
func temporaryDataDirectory() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("hearth-test-\(UUID().uuidString)").path
}

/// A logger that discards everything (tests assert on behaviour, not on log lines).
let quietLogger = Logger(label: "hearth-test") { _ in SwiftLogNoOpLogHandler() }

/// Runs `work` on `count` threads at once (blocking socket clients must not occupy the
/// cooperative thread pool) and rethrows the first failure.
func concurrently(_ count: Int, _ work: @escaping @Sendable (Int) throws -> Void) throws {
    let failures = FailureBox()
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            do { try work(i) } catch { failures.record(error) }
        }
        thread.start()
    }
    group.wait()
    if let first = failures.first { throw first }
}

final class FailureBox: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var errors: [any Error] = []

    func record(_ error: any Error) {
        lock.lock()
        errors.append(error)
        lock.unlock()
    }

    var first: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return errors.first
    }
}
