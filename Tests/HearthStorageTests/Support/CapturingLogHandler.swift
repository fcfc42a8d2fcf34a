import Foundation
import Logging

/// Collects log lines so that tests can assert on warnings.
final class LogCapture: @unchecked Sendable {
    struct Entry {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    // Protected by `lock`.
    private let lock = NSLock()
    private var storage: [Entry] = []

    var entries: [Entry] { lock.withLock { storage } }

    func append(_ entry: Entry) { lock.withLock { storage.append(entry) } }

    func clear() { lock.withLock { storage.removeAll() } }

    func entries(atLeast level: Logger.Level) -> [Entry] { entries.filter { $0.level >= level } }

    var logger: Logger {
        Logger(label: "hearth.storage.test") { _ in CapturingLogHandler(capture: self) }
    }
}

struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        capture.append(LogCapture.Entry(level: event.level, message: "\(event.message)", metadata: merged))
    }
}
