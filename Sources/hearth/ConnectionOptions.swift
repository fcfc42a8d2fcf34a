import ArgumentParser
import HearthClient

#if canImport(Glibc)
import Glibc
#endif

/// `--url`, `--db` and `--timeout`, shared by every command that talks to a server.
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
            The server's database to use, by name: the URL's ?ns= (default: the URL's, else the \
            server's default database).
            """)
    var db: String?

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
        if let db {
            do { try Database.validateDatabaseName(db) } catch { throw ValidationError("--db: \(error.message)") }
        }
    }

    /// The URL given, else `$HEARTH_URL`, else the default; with `--db`, naming that database
    /// in place of the URL's own.
    var resolvedURL: String {
        let url = url ?? getenv("HEARTH_URL").map { String(cString: $0) } ?? "hearth://127.0.0.1:9000"
        return db.map { Self.url(url, database: $0) } ?? url
    }

    /// `url` naming the database `name` (`…/?ns=name`), whatever query it had.
    static func url(_ url: String, database name: String) -> String {
        var base = Substring(url)
        if let query = base.firstIndex(of: "?") { base = base[..<query] }
        if base.hasSuffix("/") { base = base.dropLast() }
        return "\(base)/?ns=\(name)"
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
