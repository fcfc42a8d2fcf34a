import HearthAuth
public import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
public import HearthStorage
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix

/// The running database server: a TCP listener, its connections and the engine.
///
/// `start` binds and returns once connections are accepted; `shutdown` is graceful: it stops
/// accepting, sends `goaway` to every connection, answers what is in flight, runs the
/// connections' onDisconnect operations, and stops the threads.
public final class HearthServer: Sendable {
    public let configuration: ServerConfiguration
    /// The bound address (with the actual port when 0 was asked for).
    public let localAddress: SocketAddress
    /// The HTTP API's bound address; nil when the listener is off.
    public let httpAddress: SocketAddress?
    /// The daemon's databases (Databases/).
    let databases: DatabaseRegistry
    /// The default database's engine.
    var engine: Engine { databases.defaultDatabase.engine }
    let security: SecurityState
    private let tls: TLSSetup?
    private let ioGroup: MultiThreadedEventLoopGroup
    private let engineGroup: MultiThreadedEventLoopGroup
    private let listener: any Channel
    private let httpListener: (any Channel)?
    private let registry: ConnectionRegistry
    private let logger: Logger
    private let shutdownTask = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// This server's place in a cluster; nil standalone.
    let clusterNode = NIOLockedValueBox<ClusterNode?>(nil)
    /// The state captured when the engine stopped, so that it can still be read afterwards.
    private let finalState = NIOLockedValueBox<(Node, UInt64)?>(nil)

    /// The bound TCP port.
    public var port: Int { localAddress.port ?? configuration.port }
    /// The bound HTTP port; nil when the listener is off.
    public var httpPort: Int? { httpAddress?.port }

    /// The `/.well-known/hearth/` endpoints: health, metrics and stats (docs/OBSERVABILITY.md).
    public var wellKnown: WellKnownEndpoints {
        WellKnownEndpoints(
            engine: engine, configuration: configuration, security: security, eventLoops: ioGroup, linePort: port,
            otherDatabases: databases.otherMetrics)
    }

    /// This server's metrics (its own registry).
    public var metrics: ServerMetrics { engine.metrics }

    private init(
        configuration: ServerConfiguration, localAddress: SocketAddress, databases: DatabaseRegistry,
        security: SecurityState,
        tls: TLSSetup?, ioGroup: MultiThreadedEventLoopGroup, engineGroup: MultiThreadedEventLoopGroup,
        listener: any Channel, httpListener: (any Channel)?, registry: ConnectionRegistry, logger: Logger
    ) {
        self.configuration = configuration
        self.localAddress = localAddress
        self.httpAddress = httpListener?.localAddress
        self.httpListener = httpListener
        self.databases = databases
        self.security = security
        self.tls = tls
        self.ioGroup = ioGroup
        self.engineGroup = engineGroup
        self.listener = listener
        self.registry = registry
        self.logger = logger
    }

    /// Loads the rules, keys and certificates, opens the data directory, recovers the database,
    /// runs the onDisconnect operations of the previous run's connections (kept by the log when
    /// it ended without running them: a crash), and returns once the server accepts connections. Throws `ConfigurationError` for unusable
    /// security settings (among them: no rules on a reachable address without `insecureOpen`,
    /// docs/security.md, "Modes"), and `StorageError` when the directory is locked by another process or
    /// its files are damaged (the message names the file and offset).
    /// `fileSystem` is the storage's seam to the disk (tests inject faults through it).
    /// `clock` is the server's time in ms since the epoch (tests fix it, e.g. for the rules' `now`).
    public static func start(
        configuration: ServerConfiguration, fileSystem: any FileSystem = PosixFileSystem(), logger: Logger,
        clock: @escaping @Sendable () -> Int64 = wallClockMilliseconds
    ) async throws -> HearthServer {
        try await start(
            configuration: configuration, fileSystem: fileSystem, logger: logger, clock: clock, cluster: nil)
    }

    /// `start`, as a member of a cluster when `cluster` is given (Cluster/).
    static func start(
        configuration: ServerConfiguration, fileSystem: any FileSystem = PosixFileSystem(), logger: Logger,
        clock: @escaping @Sendable () -> Int64 = wallClockMilliseconds, cluster: ClusterSetup?
    ) async throws -> HearthServer {
        let rulesStore = RulesStore(rulesFile: configuration.rulesFile, dataDirectory: configuration.dataDirectory)
        let (rules, rulesSource) = try rulesStore.load(logger: logger)
        let openWarning = try openModeWarning(configuration, hasRules: rules != nil)
        if let openWarning { logger.warning("\(openWarning)") }
        if let rulesSource { logger.info("rules in force", metadata: ["file": "\(rulesSource)"]) }
        if let rules, let noSignIn = noSignInWarning(configuration, rules: rules) { logger.warning("\(noSignIn)") }
        let verifier = try await loadVerifier(configuration)
        let tls = try TLSSetup.load(
            certificate: configuration.tlsCertificate, key: configuration.tlsKey, clientCA: configuration.tlsClientCA)
        let reachable = !isLoopback(configuration.host)
        let security = SecurityState(
            limits: configuration.protection, verifier: verifier, open: rules == nil,
            helloWarning: reachable ? openWarning : nil, clusterSecret: cluster?.secret ?? configuration.clusterSecret)
        let keyRefresher = try await JWKSRefresher.start(configuration.tokens, security: security, logger: logger)
        security.keyRefresher.withLockedValue { $0 = keyRefresher }
        warnIfDescriptorsRunOutFirst(configuration.protection, logger: logger)
        // A taken port is reported now, not after a recovery that may take long.
        try ListenError.probe(host: configuration.host, port: configuration.port)
        if let httpPort = configuration.httpPort { try ListenError.probe(host: configuration.host, port: httpPort) }
        let clustered = cluster != nil || configuration.cluster != nil
        // The engines' threads: different databases' writes run on different cores. One
        // database's engine uses one of them, beside the I/O threads.
        let engineGroup = MultiThreadedEventLoopGroup(
            numberOfThreads: configuration.databases.engineThreads ?? max(2, System.coreCount))
        // One I/O thread per core, one engine's counting as one: a thread more than the cores
        // only adds context switches.
        let ioGroup = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount - 1))
        let engineLoops = Array(engineGroup.makeIterator())
        let databaseContext = HostedDatabase.Context(
            configuration: configuration, access: security.access, fileSystem: fileSystem, logger: logger,
            clock: clock,
            counters: { [defaultName = configuration.databases.defaultName, security] name in
                name.text == defaultName ? security.counters : SecurityCounters()
            }, clustered: clustered)
        let defaultName = try DatabaseName(configuration.databases.defaultName)
        let defaultDatabase = try HostedDatabase.open(
            name: defaultName, directory: configuration.dataDirectory, loop: engineLoops[0], context: databaseContext,
            rules: rules, rulesStore: rulesStore)
        // In a cluster, the previous run's onDisconnect operations may belong to other nodes'
        // live connections: the leader decides.
        if !clustered { try await defaultDatabase.runOrphanedOnDisconnect().get() }
        let engine = defaultDatabase.engine
        let databases = DatabaseRegistry(
            layout: DatabaseLayout(dataDirectory: configuration.dataDirectory, defaultName: defaultName.text),
            settings: configuration.databases, defaultDatabase: defaultDatabase, engineLoops: engineLoops,
            context: databaseContext,
            createsOnFirstUse: configuration.databases.createsOnFirstUse(host: configuration.host),
            clustered: clustered)
        databases.startIdleTimer()
        logger.info(
            "databases",
            metadata: [
                "default": "\(defaultName)", "others": "\(databases.otherCount)",
                "engineThreads": "\(engineLoops.count)",
                "autoCreate": "\(configuration.databases.createsOnFirstUse(host: configuration.host))",
            ])
        _ = MemoryTrimmer.fixAllocatorThresholds
        let trimmer = MemoryTrimmer()
        engine.loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { _ in
            trimmer.tick(writes: databases.openDatabases.reduce(0) { $0 + $1.engine.metrics.writesApplied })
        }
        var clusterNode: ClusterNode?
        let maxPeerLine = max(64 << 20, configuration.maxMessageBytes * 4)
        // A replica's forwarded request wraps a client's line (up to maxMessageBytes) with the
        // client's identity (its token, itself up to maxMessageBytes): a clustered listener frames
        // lines up to that, and each connection holds its clients to maxMessageBytes.
        let inboundLineLimit =
            cluster == nil && configuration.cluster == nil
            ? configuration.maxMessageBytes : configuration.maxMessageBytes * 2 + 64 * 1024
        if let cluster {
            let node = ClusterNode(
                node: cluster.node, name: cluster.name, secret: cluster.secret, membership: cluster.membership,
                group: ioGroup, maxLineBytes: maxPeerLine, peerTLS: try tls?.peerClientContext(peerCA: cluster.peerCA),
                logger: logger)
            try await node.attach(to: engine, syncReplicas: cluster.syncReplicas, syncTimeoutMs: cluster.syncTimeoutMs)
            clusterNode = node
        } else if configuration.cluster != nil {
            // Until etcd decides, this node takes no write of its own (it holds them).
            try await engine.loop.submit {
                _ = engine.joinCluster(hooks: nil)
            }.get()
        }
        let registry = ConnectionRegistry()
        clusterNode?.broadcaster.withLockedValue { $0 = { registry.broadcast($0) } }
        let nextID = ManagedAtomicCounter()
        // Gathered on a clustered node only, where each engine turn costs a replica round trip.
        // Standalone, the engine does better starting on the first connection's requests while
        // the loop reads the others'.
        let gatherers = clustered ? SubmissionGatherers(loops: ioGroup, engine: engine) : nil
        let listenerContext = ListenerContext(
            databases: databases, configuration: configuration, security: security, tls: tls, registry: registry,
            connectionIDs: nextID, logger: logger, clock: clock)
        let listener: any Channel
        var httpListener: (any Channel)?
        do {
            listener = try await LineListener.bind(
                on: ioGroup, context: listenerContext, gatherers: gatherers, maxLineBytes: inboundLineLimit)
        } catch {
            await stop(databases: databases, ioGroup: ioGroup, engineGroup: engineGroup)
            throw error
        }
        if let httpPort = configuration.httpPort {
            let wellKnown = WellKnownEndpoints(
                engine: engine, configuration: configuration, security: security, eventLoops: ioGroup,
                linePort: listener.localAddress?.port, otherDatabases: databases.otherMetrics)
            do {
                httpListener = try await HTTPListener.bind(
                    port: httpPort, on: ioGroup, context: listenerContext,
                    wellKnown: { path, loop in wellKnown.respond(to: path, on: loop) })
            } catch {
                try? await listener.close()
                await stop(databases: databases, ioGroup: ioGroup, engineGroup: engineGroup)
                throw error
            }
            if let address = httpListener?.localAddress {
                let scheme = tls == nil ? "http" : "https"
                let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
                logger.info("HTTP API (Firebase REST) on \(scheme)://\(host):\(address.port ?? httpPort)")
            }
        }
        guard let address = listener.localAddress else {
            throw DatabaseError(.internal, "the listening socket has no local address")
        }
        let server = HearthServer(
            configuration: configuration, localAddress: address, databases: databases, security: security, tls: tls,
            ioGroup: ioGroup, engineGroup: engineGroup, listener: listener, httpListener: httpListener,
            registry: registry, logger: logger)
        if clusterNode == nil, configuration.cluster != nil {
            do {
                clusterNode = try await joinEtcdCluster(
                    configuration, engine: engine, tls: tls, tcpPort: address.port ?? configuration.port,
                    httpPort: httpListener?.localAddress?.port, group: ioGroup, maxPeerLine: maxPeerLine,
                    registry: registry, logger: logger)
            } catch {
                server.clusterNode.withLockedValue { $0 = nil }
                await server.shutdown()
                throw error
            }
        }
        server.clusterNode.withLockedValue { $0 = clusterNode }
        return server
    }

    /// Registers this node in etcd and lets the coordinator decide its role (docs/cluster.md).
    private static func joinEtcdCluster(
        _ configuration: ServerConfiguration, engine: Engine, tls: TLSSetup?, tcpPort: Int, httpPort: Int?,
        group: any EventLoopGroup, maxPeerLine: Int, registry: ConnectionRegistry, logger: Logger
    ) async throws -> ClusterNode? {
        guard let settings = try configuration.resolvedCluster(tcpPort: tcpPort, httpPort: httpPort) else { return nil }
        let membership = try EtcdMembership(settings: settings, logger: logger)
        let node = ClusterNode(
            node: settings.node, name: settings.name, secret: configuration.clusterSecret, membership: membership,
            group: group, maxLineBytes: maxPeerLine, peerTLS: try tls?.peerClientContext(peerCA: settings.peerCA),
            logger: logger)
        try await node.attach(to: engine, syncReplicas: settings.syncReplicas, syncTimeoutMs: settings.syncTimeoutMs)
        node.onLeave = { await membership.stop() }
        node.broadcaster.withLockedValue { $0 = { registry.broadcast($0) } }
        do {
            try await membership.start(
                assign: { [weak node] role in node?.assign(role) },
                lost: { [weak engine] nodes in engine?.submit(.cluster(.membersLost(nodes))) })
        } catch {
            node.detach()
            throw ConfigurationError("cluster: could not join through etcd \(settings.etcd): \(error)")
        }
        logger.info(
            "joined the cluster",
            metadata: ["cluster": "\(settings.name)", "node": "\(settings.node)", "advertise": "\(settings.advertise)"])
        return node
    }

    /// Undoes a start that could not open its listeners.
    private static func stop(
        databases: DatabaseRegistry, ioGroup: MultiThreadedEventLoopGroup, engineGroup: MultiThreadedEventLoopGroup
    ) async {
        await databases.closeAll()
        await databases.defaultDatabase.close()
        try? await ioGroup.shutdownGracefully()
        try? await engineGroup.shutdownGracefully()
    }

    /// With no rules the server is open (docs/security.md, "Modes"). On loopback that is allowed with a
    /// warning; on a reachable address only with `insecureOpen`. Returns the warning to log.
    static func openModeWarning(
        _ configuration: ServerConfiguration, hasRules: Bool
    ) throws(ConfigurationError)
        -> String?
    {
        guard !hasRules else { return nil }
        if isLoopback(configuration.host) {
            return
                "no rulesFile: the server is OPEN (anyone who reaches \(configuration.host) may read and write everything); fine on your own machine, never on a reachable address"
        }
        guard configuration.insecureOpen else {
            throw ConfigurationError(
                "refusing to start open on \(configuration.host), which other machines can reach: give a rules file (rulesFile in the configuration, HEARTH_RULES_FILE) or, to accept the risk, --insecure-open (HEARTH_INSECURE_OPEN=1, insecureOpen: true)"
            )
        }
        return
            "insecureOpen: the server is OPEN on \(configuration.host): anyone who reaches it may read and write everything"
    }

    /// Rules whose conditions look at `auth` on a server where nobody can sign in (no admin secret,
    /// no JWT secret or key, no emulator owner): what those rules keep for signed-in users is
    /// served to no one. Returns the warning to log, naming what to configure.
    static func noSignInWarning(_ configuration: ServerConfiguration, rules: RuleSet) -> String? {
        let tokens = configuration.tokens
        let canSignIn =
            !tokens.adminSecrets.isEmpty || !(tokens.jwtSecret ?? "").isEmpty || !tokens.jwtPublicKeyFiles.isEmpty
            || tokens.jwtPublicKeysURL != nil || tokens.emulatorOwnerIsAdmin
        guard !canSignIn, mentionsAuth(rules.document) else { return nil }
        return
            "the rules need sign-in but nobody can sign in: no admin secret and no JWT key is configured, so what the rules keep for signed-in users is served to no one; set HEARTH_ADMIN_SECRET (adminSecrets) for admins and HEARTH_JWT_SECRET (jwtSecret) or jwtPublicKeys for users' tokens"
    }

    /// Whether a rule expression (`.read`, `.write`, `.validate`) of `document` refers to `auth`.
    private static func mentionsAuth(_ document: JSONValue) -> Bool {
        guard case .object(let members) = document else { return false }
        for member in members {
            if [".read", ".write", ".validate"].contains(member.key), case .string(let expression) = member.value,
                expression.contains("auth")
            {
                return true
            }
            if mentionsAuth(member.value) { return true }
        }
        return false
    }

    /// The admin secrets and JWT keys the configuration names, with the key files read now.
    static func loadVerifier(_ configuration: ServerConfiguration) async throws(DatabaseError) -> TokenVerifier {
        try await TokenVerifier.load(configuration.tokens) { path in
            guard let bytes = readWholeFile(path) else { throw ConfigurationError("can't read \(path)") }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Logs `maxConnections` against the open-files limit, with a warning when the descriptors
    /// would run out before the limit refuses a connection (a `maxConnections` set above what the
    /// limit leaves room for): new clients would then time out at accept instead of being refused.
    private static func warnIfDescriptorsRunOutFirst(_ limits: ProtectionLimits, logger: Logger) {
        let openFiles = ProtectionLimits.openFileLimit()
        let metadata: Logger.Metadata = [
            "maxConnections": "\(limits.maxConnections)",
            "openFileLimit": "\(openFiles.map(String.init) ?? "unlimited")",
        ]
        if let room = ProtectionLimits.connectionsWithinDescriptors(openFileLimit: openFiles),
            limits.maxConnections > room
        {
            logger.warning(
                "maxConnections is above what the open-files limit leaves room for: raise the limit (ulimit -n, LimitNOFILE) or lower maxConnections to \(max(room, 1))",
                metadata: metadata)
        } else {
            logger.info("connection limit", metadata: metadata)
        }
    }

    /// SIGHUP: re-reads the rules file, the JWT keys and the TLS files. What fails to load is
    /// logged with the reason and the settings in use stay; returns those reasons.
    @discardableResult
    public func reload() async -> [String] {
        var failures: [String] = []
        // Each open database's rules file (a closed one reads its file when it opens).
        for database in databases.openDatabases {
            let rulesFile =
                configuration.databases.settings(for: database.name.text).rulesFile ?? configuration.rulesFile
            guard let rulesFile else { continue }
            do {
                let store = RulesStore(rulesFile: rulesFile, dataDirectory: database.directory)
                let (loaded, source) = try store.load(logger: logger)
                if let rules = loaded {
                    let done = database.engine.loop.makePromise(of: Void.self)
                    database.engine.submit(.replaceRules(rules, done))
                    try? await done.futureResult.get()
                    logger.notice(
                        "reloaded the rules", metadata: ["file": "\(source ?? "")", "db": "\(database.name)"])
                }
            } catch {
                failures.append(error.message)
                logger.error(
                    "the rules were not reloaded; the old rules stay",
                    metadata: ["error": "\(error.message)", "db": "\(database.name)"])
            }
        }
        do {
            security.replaceVerifier(try await Self.loadVerifier(configuration))
        } catch {
            failures.append(error.message)
            logger.error("the JWT keys were not reloaded; the old keys stay", metadata: ["error": "\(error.message)"])
        }
        if let tls {
            do {
                try tls.reload()
                logger.notice("reloaded the TLS certificate")
            } catch {
                failures.append(error.message)
                logger.error(
                    "the TLS certificate was not reloaded; the old one stays", metadata: ["error": "\(error.message)"])
            }
        }
        return failures
    }

    /// Security counters (denials, failed authentications, limit hits), for tests and metrics.
    public var securityCounts: (denials: Int, failedAuths: Int, limitHits: Int) {
        (security.counters.denials.count, security.counters.failedAuths.count, security.counters.limitHits.count)
    }

    /// Graceful shutdown; safe to call more than once (later calls wait for the first).
    public func shutdown() async {
        // A task, not the caller's context, runs the shutdown: concurrent callers share it, and
        // it outlives the event loops it stops.
        let task = shutdownTask.withLockedValue { task in
            if let task { return task }
            let newTask = Task { await self.performShutdown() }
            task = newTask
            return newTask
        }
        await task.value
    }

    private func performShutdown() async {
        logger.info("shutting down", metadata: ["connections": "\(registry.count)"])
        security.keyRefresher.withLockedValue { $0 }?.stop()
        if let node = clusterNode.withLockedValue({ $0 }) {
            await node.leave()
            node.detach()
            let engine = self.engine
            try? await engine.loop.submit { node.closeLink() }.get()
        }
        try? await listener.close()
        try? await httpListener?.close()
        // Everything already read has been submitted by the time each connection handles
        // `beginShutdown`; connections close once their responses are out.
        let closed = registry.beginShutdownOfAll()
        for future in closed { try? await future.get() }
        // The connections' onDisconnect writes run before the engine stops.
        try? await engine.barrier().get()
        if let state = try? await engine.snapshot().get() {
            finalState.withLockedValue { $0 = state }
        }
        await databases.closeAll()
        await databases.defaultDatabase.close()
        try? await ioGroup.shutdownGracefully()
        try? await engineGroup.shutdownGracefully()
        logger.info("stopped")
    }

    /// The whole tree and its revision (for tests and tools); after shutdown, the final state.
    public func snapshot() async throws -> (root: Node, rev: UInt64) {
        if let (root, rev) = finalState.withLockedValue({ $0 }) { return (root, rev) }
        let (root, rev) = try await engine.snapshot().get()
        return (root, rev)
    }
}

/// Whether `host` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
func isLoopback(_ host: String) -> Bool {
    host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
}
