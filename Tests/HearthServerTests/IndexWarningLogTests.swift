import Foundation
import HearthJSON
import HearthServer
import Logging
import XCTest

/// The undeclared-index warning is logged once per location and ordering (issue #16, item 13).
final class IndexWarningLogTests: XCTestCase {
    func testEachUndeclaredOrderingIsLoggedOncePerLocation() async throws {
        let logs = ServerLogCapture()
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory = temporaryDataDirectory()
        configuration.fsync = .never
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        let server = try await HearthServer.start(configuration: configuration, logger: logs.logger)
        do {
            let c = try TestClient(port: server.port)
            try c.request(#"{"op":"set","path":"/facts/dinosaurs","value":{"a":{"height":1,"weight":2}}}"#)
            for (path, order) in [
                ("/facts/dinosaurs", "height"), ("/facts/dinosaurs", "height"), ("/facts/dinosaurs", "weight"),
                ("/facts/dinosaurs", "weight"), ("/facts/dinosaurs", "$value"), ("/facts", "height"),
            ] {
                let response = try c.request(#"{"op":"get","path":"\#(path)","query":{"orderBy":"\#(order)"}}"#)
                XCTAssertNotNil(response["warning"], response.jsonString)
            }
            let warned = logs.entries(atLeast: .warning)
                .filter { $0.message == "query on an undeclared index" }
                .map { "\($0.metadata["path"] ?? "") \($0.metadata["orderBy"] ?? "")" }
            XCTAssertEqual(
                warned,
                ["/facts/dinosaurs height", "/facts/dinosaurs weight", "/facts/dinosaurs .value", "/facts height"])
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }
}

/// Collects the server's log lines so that a test can assert on them.
final class ServerLogCapture: @unchecked Sendable {
    struct Entry {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    // Guarded by `lock`.
    private let lock = NSLock()
    private var storage: [Entry] = []

    var entries: [Entry] { lock.withLock { storage } }

    func entries(atLeast level: Logger.Level) -> [Entry] { entries.filter { $0.level >= level } }

    func append(_ entry: Entry) { lock.withLock { storage.append(entry) } }

    var logger: Logger { Logger(label: "hearth-test") { _ in Handler(capture: self) } }

    private struct Handler: LogHandler {
        let capture: ServerLogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            if let extra = event.metadata { merged.merge(extra) { $1 } }
            capture.append(Entry(level: event.level, message: "\(event.message)", metadata: merged))
        }
    }
}
