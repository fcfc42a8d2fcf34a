import ArgumentParser
import HearthClient

#if canImport(Glibc)
import Glibc
#endif

/// `--url` and `--timeout`, shared by every command that talks to a server.
struct ConnectionOptions: ParsableArguments {
    @Option(
        help:
            """
            The server, hearth://host[:port], or hearths:// for TLS; several servers (a cluster) as \
            hearth://h1:9000,h2:9000 (default: $HEARTH_URL, else hearth://127.0.0.1:9000).
            """
    )
    var url: String?

    @Option(
        help: """
            Seconds to wait for the connection, and for each request while nothing is sent or \
            received (a large answer still arriving is waited for).
            """)
    var timeout: Double = 10

    /// `--token`, `--ca-file`, `--insecure-skip-verify`.
    @OptionGroup var security: SecurityOptions

    func validate() throws {
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
    }

    /// The URL given, else `$HEARTH_URL`, else the default.
    var resolvedURL: String {
        url ?? getenv("HEARTH_URL").map { String(cString: $0) } ?? "hearth://127.0.0.1:9000"
    }

    /// A connected client: fails (status 1) at once when the connection is refused or the host
    /// is unknown, and when the server does not greet within `timeout`.
    func connect() async throws -> Database {
        var configuration = Database.Configuration()
        configuration.connectTimeout = .nanoseconds(Int64(min(timeout, 3600) * 1e9))
        security.apply(to: &configuration)
        let database = try Database(validatingURL: resolvedURL, configuration: configuration)
        ReceiveProgress.watch(database)
        do {
            try await withTimeout(timeout, "connecting to \(database.url)") { try await database.waitForConnection() }
        } catch let error as HearthError {
            throw CLIFailure.failed(Self.describe(error))
        }
        try await security.authenticate(database, within: self)
        return database
    }

    /// A connection failure in the CLI's words: refused connections suggest starting hearthd.
    static func describe(_ error: HearthError) -> String {
        switch error.code {
        case .connectionRefused: return "\(error.message) (is hearthd running?)"
        case .unknownHost, .connectionFailed, .notClustered: return error.message
        default: return error.description
        }
    }

    /// `operation`, failing (status 1) when nothing is sent or received for `timeout` while it
    /// runs (a large answer that keeps arriving is waited for).
    func bounded<T: Sendable>(_ what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withTimeout(timeout, what, progress: ReceiveProgress.source, operation)
    }
}
