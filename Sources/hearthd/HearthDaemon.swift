import ArgumentParser
import Dispatch
import HearthServer
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearthd`: runs the Hearth database server.
@main
struct HearthDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearthd",
        abstract: "Hearth: a realtime JSON database server.",
        discussion: """
            Serves one JSON tree over TCP with a line-delimited JSON protocol (docs/PROTOCOL.md).
            Settings come from, in increasing precedence: built-in defaults, the configuration
            file (--config or HEARTH_CONFIG; see config/hearth.json for every option), the
            environment (HEARTH_HOST, HEARTH_PORT, HEARTH_DATA_DIR, HEARTH_FSYNC,
            HEARTH_LOG_LEVEL) and these flags. SIGTERM or SIGINT shuts down gracefully.
            """,
        version: hearthVersion)

    @Option(help: "Address to bind (default 127.0.0.1).")
    var host: String?

    @Option(help: "TCP port; 0 picks a free one (default 9000).")
    var port: Int?

    @Option(name: .customLong("data-dir"), help: "Directory for the data files (default ./data).")
    var dataDir: String?

    @Option(help: "Configuration file (JSON; see config/hearth.json).")
    var config: String?

    @Option(help: "When to force the log to disk: always, everysec or never (default always).")
    var fsync: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default info).")
    var logLevel: String?

    func run() async throws {
        let environment = Self.environment()
        var settings = ServerConfiguration()
        do {
            if let path = config ?? environment["HEARTH_CONFIG"] {
                try settings.apply(fileAt: path)
            }
            try settings.apply(environment: environment)
            let flags: [(String, String?)] = [
                ("host", host), ("port", port.map(String.init)), ("dataDir", dataDir), ("fsync", fsync),
                ("logLevel", logLevel),
            ]
            for case (let setting, let text?) in flags {
                try settings.apply(setting: setting, text: text, source: "flag --\(setting)")
            }
        } catch {
            throw ValidationError(error.message)
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "hearthd")
        let server = try await HearthServer.start(configuration: settings, logger: logger)
        logger.info(
            "hearthd \(hearthVersion) serving \(settings.dataDirectory) on \(settings.host):\(server.port) (fsync \(settings.fsync.rawValue))"
        )
        await Self.waitForTerminationSignal()
        await server.shutdown()
    }

    /// Suspends until SIGTERM or SIGINT arrives.
    static func waitForTerminationSignal() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = DispatchQueue(label: "hearthd.signals")
            let resumed = SignalLatch(continuation)
            for sig in [SIGTERM, SIGINT] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
                source.setEventHandler { resumed.fire() }
                source.resume()
                resumed.keep(source)
            }
        }
    }

    static func environment() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") {
                result[String(text[..<eq])] = String(text[text.index(after: eq)...])
            }
            pointer += 1
        }
        return result
    }
}

/// Resumes a continuation once, from the signal queue; keeps the signal sources alive.
final class SignalLatch: @unchecked Sendable {
    // Mutated only on the serial queue "hearthd.signals" (and during setup, before any signal).
    private var continuation: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func keep(_ source: any DispatchSourceSignal) { sources.append(source) }

    func fire() {
        continuation?.resume()
        continuation = nil
    }
}
