import ArgumentParser
import Dispatch
import HearthCore
import HearthServer
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearthd`: runs the Hearth database server.
///
/// The entry point is synchronous: the main thread blocks until the server has shut down while
/// the server runs on its event loops. (An `async` entry point parks the main thread in
/// `dispatch_main`, which valgrind cannot follow, and `scripts/callgrind.sh` runs hearthd under
/// valgrind's callgrind to count instructions per request.)
@main
struct HearthDaemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearthd",
        abstract: "Hearth: a realtime JSON database server.",
        discussion: """
            Serves one JSON tree over TCP with a line-delimited JSON protocol (docs/PROTOCOL.md). \
            Settings come from, in increasing precedence: built-in defaults, the configuration \
            file (--config or HEARTH_CONFIG; see config/hearth.json for every option), the \
            environment (HEARTH_HOST, HEARTH_PORT, HEARTH_DATA_DIR, HEARTH_FSYNC, \
            HEARTH_LOG_LEVEL) and these flags. SIGTERM or SIGINT shuts down gracefully.
            """,
        version: hearthVersion)

    @Option(help: "Address to bind (default 127.0.0.1).")
    var host: String?

    @Option(help: "TCP port; 0 picks a free one (default 9000).")
    var port: Int?

    @Option(
        name: .customLong("http-port"),
        help:
            "HTTP API port (Firebase REST and streaming, health, metrics); 0 picks a free one, off disables it (default 9080)."
    )
    var httpPort: String?

    @Option(name: .customLong("data-dir"), help: "Directory for the data files (default ./data).")
    var dataDir: String?

    @Option(help: "Configuration file (JSON; see config/hearth.json).")
    var config: String?

    @Option(help: "When to force the log to disk: always, everysec or never (default always).")
    var fsync: String?

    @Option(name: .customLong("rules-file"), help: "Security rules file (Firebase format; see docs/rules.md).")
    var rulesFile: String?

    @Flag(
        name: .customLong("insecure-open"),
        help: "Start without rules on an address other machines can reach (everyone may do everything).")
    var insecureOpen = false

    @Flag(
        name: .customLong("health-check"),
        help:
            "Check the server this configuration describes instead of starting one (hello on the TCP port, 200 from the HTTP health endpoint, over TLS when it is on); exit 0 when healthy, 1 when not."
    )
    var healthCheck = false

    @Option(
        name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default info).")
    var logLevel: String?

    @Option(
        name: .customLong("cluster-etcd"),
        help:
            "etcd endpoints (comma-separated): join a cluster (docs/cluster.md); the secret comes from HEARTH_CLUSTER_SECRET."
    )
    var clusterEtcd: String?

    @Option(name: .customLong("cluster-name"), help: "The cluster's name (default hearth).")
    var clusterName: String?

    @Option(help: "This node's name in the cluster (default the host name).")
    var node: String?

    @Option(help: "host:port where clients and peers reach this node's TCP listener (default the bound address).")
    var advertise: String?

    @Option(name: .customLong("advertise-http"), help: "host:port of this node's HTTP listener for others.")
    var advertiseHttp: String?

    @Option(
        name: .customLong("sync-replicas"),
        help: "Replicas that must hold a write before it is acknowledged (default 0).")
    var syncReplicas: Int?

    func run() throws {
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let command = self
        Task {
            do {
                try await command.serve()
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            finished.signal()
        }
        finished.wait()
        try outcome.withLock { $0 }?.get()
    }

    /// Starts the server, then serves until SIGTERM or SIGINT.
    func serve() async throws {
        let environment = Self.environment()
        // Before the settings are made: the maxConnections default is derived from this limit.
        ProtectionLimits.raiseOpenFileLimit()
        var settings = ServerConfiguration()
        do {
            if let path = config ?? environment["HEARTH_CONFIG"] {
                try settings.apply(fileAt: path)
            }
            try settings.apply(environment: environment)
            let flags: [(String, String, String?)] = [
                ("host", "--host", host), ("port", "--port", port.map(String.init)),
                ("httpPort", "--http-port", httpPort), ("dataDir", "--data-dir", dataDir),
                ("fsync", "--fsync", fsync), ("logLevel", "--log-level", logLevel),
                ("rulesFile", "--rules-file", rulesFile),
            ]
            for case (let setting, let flag, let text?) in flags {
                try settings.apply(setting: setting, text: text, source: "flag \(flag)")
            }
            if insecureOpen { settings.insecureOpen = true }
            let clusterFlags: [(String, String, String?)] = [
                ("etcd", "--cluster-etcd", clusterEtcd), ("name", "--cluster-name", clusterName),
                ("node", "--node", node),
                ("advertise", "--advertise", advertise), ("advertiseHttp", "--advertise-http", advertiseHttp),
                ("syncReplicas", "--sync-replicas", syncReplicas.map(String.init)),
            ]
            for case (let setting, let flag, let text?) in clusterFlags {
                try settings.apply(clusterSetting: setting, text: text, source: "flag \(flag)")
            }
        } catch {
            throw badSetting(error.message)
        }
        if healthCheck {
            // The container image's HEALTHCHECK: the same settings, so the same ports and scheme.
            guard let problem = await HealthProbe.check(settings) else { return }
            let bytes = Array("unhealthy: \(problem)\n".utf8)
            _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            throw ExitCode.failure
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "hearthd")
        // Signals are caught from before the server starts, so an early SIGTERM is graceful too.
        let termination = TerminationSignal()
        let server: HearthServer
        do {
            server = try await HearthServer.start(configuration: settings, logger: logger)
        } catch let error as ConfigurationError {
            throw badSetting(error.message)
        } catch let error as ListenError where error.isAddressInUse {
            throw StartupError(message: "\(error.message) (another hearthd? set --port or --http-port)")
        }
        let reload = ReloadSignal { Task { await server.reload() } }
        defer { reload.stop() }
        // With TLS on, the line says so, as the HTTP API's line does with https://.
        let transport = settings.tlsCertificate == nil ? "" : " over TLS (hearths://)"
        logger.info(
            "hearthd \(hearthVersion) serving \(settings.dataDirectory) on \(settings.host):\(server.port)\(transport) (fsync \(settings.fsync.rawValue))"
        )
        await termination.wait()
        await server.shutdown()
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

/// SIGTERM and SIGINT, caught from the moment this is created until `wait` returns.
final class TerminationSignal: @unchecked Sendable {
    // `fired` and `continuation` are only touched on `queue`.
    private let queue = DispatchQueue(label: "hearthd.signals")
    private var sources: [any DispatchSourceSignal] = []
    private var fired = false
    private var continuation: CheckedContinuation<Void, Never>?

    init() {
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [unowned self] in
                fired = true
                continuation?.resume()
                continuation = nil
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Suspends until a termination signal has arrived (returns at once if one already has).
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                if self.fired {
                    continuation.resume()
                } else {
                    self.continuation = continuation
                }
            }
        }
    }
}

/// SIGHUP: reload the rules, the JWT keys and the TLS certificate (docs/security.md, "Reloading").
final class ReloadSignal: @unchecked Sendable {
    // Set once in `init`; the dispatch source is thread-safe.
    private let source: any DispatchSourceSignal

    init(_ action: @escaping @Sendable () -> Void) {
        signal(SIGHUP, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "hearthd.sighup"))
        source.setEventHandler(handler: action)
        source.resume()
    }

    func stop() { source.cancel() }
}

/// A configuration problem found at startup: reported in one line, without the usage text.
struct StartupError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
