public import HearthAuth
public import HearthCluster
public import HearthCore
public import HearthStorage
public import Logging

/// Every setting of `hearthd`, with its default. `config/hearth.json` documents each one;
/// precedence is defaults < config file < environment (`HEARTH_*`) < command-line flags.
public struct ServerConfiguration: Sendable, Equatable {
    /// Address to bind (`host`, `HEARTH_HOST`, `--host`).
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one (`port`, `HEARTH_PORT`, `--port`).
    public var port = 9000
    /// Port of the HTTP API (Firebase REST and streaming, health and metrics): 0 picks a free
    /// one, nil turns the listener off (`httpPort`, a number or `"off"`; `HEARTH_HTTP_PORT`,
    /// `--http-port`). Same `host` as the line protocol.
    public var httpPort: Int? = 9080
    /// An event stream that sent nothing for this long gets a `keep-alive` event
    /// (`sseKeepAliveSeconds`, 1–110).
    public var sseKeepAliveSeconds = 30
    /// Directory holding the data files (`dataDir`, `HEARTH_DATA_DIR`, `--data-dir`).
    public var dataDirectory = "./data"
    /// When the log is forced to disk (`fsync`, `HEARTH_FSYNC`, `--fsync`).
    public var fsync = FsyncPolicy.always
    /// Log level (`logLevel`, `HEARTH_LOG_LEVEL`, `--log-level`).
    public var logLevel = Logger.Level.info
    /// The security rules (`.read`, `.write`, `.validate`, `.indexOn`), enforced for every
    /// non-admin connection (`rulesFile`, `HEARTH_RULES_FILE`; relative to the config file).
    /// Without one the server is open, which it allows only on loopback (docs/security.md, "Modes").
    public var rulesFile: String?
    /// Start open on a non-loopback address anyway (`insecureOpen`, `HEARTH_INSECURE_OPEN=1`,
    /// `--insecure-open`).
    public var insecureOpen = false
    /// Admin secrets, JWT keys and claim checks (`adminSecrets`, `HEARTH_ADMIN_SECRET`,
    /// `jwtSecret`, `HEARTH_JWT_SECRET`, `jwtPublicKeys`, `jwtAudience`, `jwtIssuer`,
    /// `jwtClockSkewSeconds`, `emulatorOwnerIsAdmin`; Firebase Auth: `firebaseProjectId`,
    /// `jwtPublicKeysURL`, `jwtPublicKeysCAFile`). Secrets are never taken from flags.
    public var tokens = TokenVerifier.Settings()
    /// Signed webhooks for the writes matching their path patterns (`triggers`), for every
    /// database whose `databases` entry sets none of its own.
    public var triggers: [TriggerSettings] = []
    /// PEM certificate chain and private key: both listeners speak TLS when set (`tlsCertificate`,
    /// `tlsKey`); `tlsClientCA` also requires client certificates signed by that CA.
    public var tlsCertificate: String?
    public var tlsKey: String?
    public var tlsClientCA: String?
    /// Origins whose pages may call an open server from a browser (`allowedOrigins`), besides
    /// the server's own and loopback pages; `"*"` allows every origin. With rules the rules
    /// decide and every origin may call.
    public var allowedOrigins: [String] = []
    /// Connection, subscription, write-rate, memory, timeout and authentication limits.
    public var protection = ProtectionLimits()
    /// Longest accepted request line in bytes (`maxMessageBytes`).
    public var maxMessageBytes = 16 * 1024 * 1024
    /// Unsent output a connection may accumulate before it is closed as a slow consumer
    /// (`maxOutboundBytes`).
    public var maxOutboundBytes = 64 * 1024 * 1024
    /// Requests one connection may have waiting for the engine before the server stops reading
    /// from it (`maxPipelinedRequests`).
    public var maxPipelinedRequests = 16_384
    /// Data limits: key bytes, depth, string bytes (`maxKeyBytes`, `maxDepth`, `maxStringBytes`).
    public var limits = Limits.default
    /// Compact (write a snapshot, drop old log segments) once the log exceeds this many bytes
    /// and `compactionRatio` × the last snapshot (`compactionMinBytes`, `compactionRatio`).
    public var compactionMinBytes = StorageOptions.default.compactionMinBytes
    public var compactionRatio = StorageOptions.default.compactionRatio
    /// How much log a database keeps for its triggers behind, in bytes and in age
    /// (`triggerBacklogMaxBytes`, `triggerBacklogMaxSeconds`); past either, the kept log is
    /// dropped and the triggers that needed it are marked as having lost events.
    public var triggerBacklogMaxBytes: Int64 = 1 << 30
    public var triggerBacklogMaxSeconds: Int64 = 7 * 86_400
    /// Write ids remembered per client for exactly-once retries (`writeIdWindow`; 0 remembers
    /// none), and how long a client that stopped writing is remembered
    /// (`writeIdRetentionSeconds`). See docs/PROTOCOL.md "Write ids".
    public var writeIdWindow = 1000
    public var writeIdRetentionSeconds = 3600
    /// Revisions the change log keeps in memory for subscriptions that resume (`since`) without
    /// a full initial result (`changeLogRevisions`; 0 turns resuming off).
    public var changeLogRevisions = 10_000
    /// Reject queries on children without `.indexOn` instead of warning (`strictIndexes`).
    public var strictIndexes = false
    /// With rules in force, `/.well-known/hearth/metrics` needs an admin credential, as stats
    /// do (`metricsRequireAdmin`).
    public var metricsRequireAdmin = false
    /// How long a rendering of `/.well-known/hearth/metrics` is served to every scraper before
    /// the next one (`metricsCacheMilliseconds`; 0 renders each scrape).
    public var metricsCacheMilliseconds = 1000
    /// Several databases in one daemon: the default one's name, creation on first use, limits,
    /// idle closing, the trash and each database's own settings (Databases/).
    public var databases = DatabaseSettings()
    /// The name and version sent in `hello`.
    public var serverName = "hearthd/\(hearthVersion)"
    /// Replicas and failover on etcd (`cluster`, docs/cluster.md); nil: a standalone server.
    /// An empty `advertise` means the bound TCP address, an empty `node` the host name.
    public var cluster: ClusterSettings?
    /// The secret cluster peers authenticate with (`HEARTH_CLUSTER_SECRET` only: never a flag or
    /// a file setting).
    public var clusterSecret: String?

    public init() {}
}

/// The version of this build.
public let hearthVersion = "0.1.0"
