import ArgumentParser
import HearthClient

#if canImport(Glibc)
import Glibc
#endif

/// `--url` and `--timeout`, shared by every command that talks to a server.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The server, hearth://host[:port] (default: $HEARTH_URL, else hearth://127.0.0.1:9000).")
    var url: String?

    @Option(help: "Seconds to wait for the connection and for each answer before failing.")
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
    }

    /// The URL given, else `$HEARTH_URL`, else the default.
    var resolvedURL: String {
        url ?? getenv("HEARTH_URL").map { String(cString: $0) } ?? "hearth://127.0.0.1:9000"
    }

    /// A connected client: fails (status 1) when the server does not answer within `timeout`.
    func connect() async throws -> Database {
        let database = try Database(validatingURL: resolvedURL)
        let connected = database.reference(withPath: ".info/connected")
        try await withTimeout(timeout, "connecting to \(database.url)") {
            for try await event in connected.events(of: .value) where event.snapshot.value as? Bool == true {
                return
            }
        }
        return database
    }

    /// `operation`, failing (status 1) when it takes longer than `timeout`.
    func bounded<T: Sendable>(_ what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withTimeout(timeout, what, operation)
    }
}
