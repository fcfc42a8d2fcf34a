public import Dispatch
public import Logging
public import NIOCore
import NIOPosix

/// A connection to a Hearth server (or to one node of a cluster), and the entry point to its data.
///
/// The client connects at once and stays connected: it reconnects after a lost connection
/// with exponential backoff and jitter — to the next address when the URL lists several —,
/// re-subscribes observers, re-registers onDisconnect operations, and sends writes queued
/// meanwhile, in order. See docs/client.md.
public final class Database: Sendable {
    /// How the client connects and where callbacks run.
    public struct Configuration: Sendable {
        /// The serial queue every completion, observer and transaction block runs on, in the
        /// order the client produced them. Default: a private serial queue per `Database`.
        public var callbackQueue: DispatchQueue
        /// The first reconnect delay; doubles each failed attempt up to `reconnectMaxDelay`,
        /// and each delay is drawn at random from the upper half of that interval.
        public var reconnectMinDelay: TimeAmount = .milliseconds(100)
        public var reconnectMaxDelay: TimeAmount = .seconds(10)
        public var connectTimeout: TimeAmount = .seconds(5)
        /// How long a write refused by a cluster for want of a leader (`unavailable`: "no
        /// leader", "not the leader") keeps being sent again, with the same write id, before it
        /// fails with that error. Default 30 s: an election takes about twice the cluster's
        /// `leaseSeconds` (5 s by default). Zero fails such writes at once.
        public var leaderRetryTimeout: TimeAmount = .seconds(30)
        /// The event loops the connection runs on (one loop per `Database`).
        public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
        /// Debug and trace logging of the connection.
        public var logger = Logger(label: "hearth.client")
        /// Where tokens come from: called on every new connection (the first and each
        /// reconnect) before any request is sent, and again when the server revokes the
        /// connection's identity (`auth_revoked`, e.g. an expired token). Return a JWT or an
        /// admin secret, or nil to stay unauthenticated; a throwing provider counts as nil.
        /// Requests wait while it runs. `Database.auth(token:)` and `unauth()` take over from it.
        public var tokenProvider: (@Sendable () async throws -> String?)?
        /// The certificate authorities that vouch for a `hearths://` server: the system's
        /// roots by default. Plain `hearth://` URLs do not use TLS.
        public var tlsTrustRoots: TLSTrustRoots = .system
        /// A client certificate for `hearths://` servers that require one (mutual TLS).
        public var tlsClientCertificate: TLSClientCertificate?
        /// Keep pending writes and the data of listened locations on disk (off by default, as
        /// Firebase's `isPersistenceEnabled`): they survive an app restart, observers and
        /// `getData` answer from the disk cache offline, and reconnects resume from it.
        public var persistence: Persistence?

        public init(callbackQueue: DispatchQueue = DispatchQueue(label: "hearth.client.callbacks")) {
            self.callbackQueue = callbackQueue
        }
    }

    /// Where and how much the client keeps on disk (`Configuration.persistence`).
    public struct Persistence: Sendable {
        /// A directory for this database's files, used by one `Database` at a time.
        public var directory: String
        /// The most the cache of listened data may take on disk (least recently used locations
        /// go first); pending writes are never dropped. Default 10 MiB, as Firebase's.
        public var cacheSizeBytes: Int

        public init(directory: String, cacheSizeBytes: Int = 10 << 20) {
            self.directory = directory
            self.cacheSizeBytes = cacheSizeBytes
        }
    }

    /// `hearth://host:port`, or `hearths://host:port` for TLS; with several addresses
    /// `hearth://h1:9000,h2:9000`, each with its port, in the order given; `/?ns=name` after
    /// them when the URL names a database.
    public let url: String
    /// The server's database this client uses, as the URL's `?ns=name` gave it; nil for the
    /// server's default database (no `use` is sent).
    public var databaseName: String? { repo.url.databaseName }
    let repo: Repo

    /// Connects to the server at `url` (`hearth://host[:port]`, port 9000 by default;
    /// `hearths://` for TLS), or to one of several: `hearth://h1:9000,h2:9000,h3:9000` tries
    /// them in order and moves to the next whenever a connection fails or is lost.
    /// `?ns=name` chooses one of the server's databases (`hearth://host:9000/?ns=shop`): every
    /// connection the client opens asks for it first. Without it, the server's default database.
    /// An invalid URL is a programmer error and traps; use `init(validatingURL:)` for input.
    public convenience init(url: String, configuration: Configuration = Configuration()) {
        do {
            try self.init(validatingURL: url, configuration: configuration)
        } catch {
            preconditionFailure("Database(url:): \(error.message)")
        }
    }

    /// Connects to the server at `url`, or one of its servers; throws `HearthError`
    /// (`invalid_url`) for a malformed URL (the message names a bad address and its position, or
    /// the database name that breaks the naming rule).
    public init(validatingURL url: String, configuration: Configuration = Configuration()) throws(HearthError) {
        let parsed = try DatabaseURL(url)
        self.url = parsed.description
        self.repo = Repo(url: parsed, configuration: configuration)
    }

    deinit { repo.goOffline() }

    /// The root of the database.
    public func reference() -> DatabaseReference {
        DatabaseReference(database: self, path: .root, pathError: nil)
    }

    /// The location at `path` (slashes separate keys; `".info/connected"` is allowed).
    public func reference(withPath path: String) -> DatabaseReference {
        reference().child(path)
    }

    /// Closes the connection and stops reconnecting; writes made meanwhile are queued.
    public func goOffline() { repo.goOffline() }

    /// Drops every write not yet acknowledged by the server: observers roll back, and each
    /// write's completion gets `write_canceled`. A write already sent may still be applied.
    public func purgeOutstandingWrites() { repo.purgeOutstandingWrites() }

    /// Reconnects after `goOffline()`.
    public func goOnline() { repo.goOnline() }
}
