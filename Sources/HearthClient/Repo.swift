import Dispatch
internal import HearthCore
internal import HearthJSON
internal import HearthProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The connection to a server and everything bound to it: requests, subscriptions, the
/// onDisconnect registry, `.info`, and reconnection — to the same server or, when the URL lists
/// several, to the next one (round robin, the backoff after each full round of failures).
///
/// `@unchecked Sendable`: every mutable stored property except `shared` is touched only on
/// `loop` (public entry points hop there with `loop.execute`); `shared` is guarded by its lock.
final class Repo: @unchecked Sendable {
    let url: DatabaseURL
    let configuration: Database.Configuration
    let loop: any EventLoop
    let logger: Logger

    /// State read and written from callers' threads.
    struct Shared {
        var serverTimeOffset: Int64 = 0
        var pushIDs = PushIDGenerator()
        var nextHandle: UInt = 1
        var listeners: [UInt: Listener] = [:]
        /// `host:port` of the server of the greeted connection; nil while not connected.
        var connectedAddress: String?
        /// The connected node's cluster object (hello, `cluster` events); nil for a standalone
        /// server and while not connected.
        var cluster: ClusterInfo?
    }

    let shared = NIOLockedValueBox(Shared())
    /// Bytes received and sent on every connection so far (`Database.bytesReceived`,
    /// `bytesSent`); their own locks, taken once per read from the socket and per write.
    let received = NIOLockedValueBox<UInt64>(0)
    let sent = NIOLockedValueBox<UInt64>(0)

    // MARK: Loop-confined state

    private(set) var channel: (any Channel)?
    private var connecting = false
    private var wantsOnline = true
    /// Full rounds of failed attempts (every address once) since the last hello: the backoff's
    /// exponent.
    private var attempt = 0
    /// The address of the URL being used or tried (an index into `url.endpoints`).
    private var endpointIndex = 0
    /// Why each attempt of the current round failed, in order.
    private var roundFailures: [HearthError] = []
    private var reconnectTask: Scheduled<Void>?
    private var nextRequestID: Int64 = 1
    /// Sent, in order, waiting for their responses.
    private var inFlight = CircularBuffer<Outgoing>()
    /// User requests made while disconnected, in order.
    var queued: [Outgoing] = []
    /// Views by location and query, and by subscription on the current connection.
    var views: [ClientView.ID: ClientView] = [:]
    var viewsBySub: [Int: ClientView] = [:]
    /// Views whose result may have changed since the last `flush`.
    var dirty: Set<ClientView.ID> = []
    /// Views whose catch-up after a reconnect is still arriving: events wait until it is all in.
    var catchingUp: Set<ClientView.ID> = []
    /// The revision of the events being gathered into one group (one write's events are raised
    /// together).
    var eventGroupRev: Int64?
    /// The highest revision any line from the server carried: every subscription of the
    /// connection had all its events up to it.
    var lastRev: UInt64 = 0
    /// Local writes not yet answered, in the order they were made.
    var pendingWrites: [PendingWrite] = []
    /// The completion of each pending write, until it runs.
    var writeCompletions: [UInt64: @Sendable (HearthError?) -> Void] = [:]
    /// The number the next write id takes (write ids are `clientID:number`).
    var nextWriteNumber: UInt64 = 1
    /// This client's id in write ids (protocol "Write ids"): random, or kept by the disk store.
    var clientID: String
    /// The disk cache and pending-write store (`Configuration.persistence`), nil without one.
    var store: LocalStore?
    /// Views whose result the disk cache has not taken yet, and the scheduled save.
    var cacheDirty: Set<ClientView.ID> = []
    var cacheSave: Scheduled<Void>?
    var onDisconnectEntries: [OnDisconnectEntry] = []
    var nextOnDisconnectID = 1
    /// Completions of registrations overridden before the server answered them.
    var overriddenOnDisconnect: [Int: @Sendable (HearthError?) -> Void] = [:]
    /// The client-made `/.info` tree.
    var infoRoot: Node = .empty
    /// The credential, whether requests wait for an `auth`, and TLS (see Repo+Auth, Repo+TLS).
    var security = ConnectionSecurity()
    /// The current connection's `use` of the URL's database (see Repo+Database).
    var choice = DatabaseChoice()
    /// Whether the current connection's hello has arrived (`.info/connected` is true).
    private var greeted = false
    /// Why the last connection attempt failed; nil once a connection is greeted.
    private var connectionError: HearthError?
    /// Callers of `waitForConnection`, answered by the next hello or failed attempt.
    private var connectionWaiters: [@Sendable (Result<Void, HearthError>) -> Void] = []
    /// The connection-level error the server sent before closing the current connection
    /// (`{"event":"error"}`, e.g. `slow_consumer`).
    private var serverError: HearthError?
    /// When the current connection's hello arrived.
    private var greetedAt: NIODeadline?

    init(url: DatabaseURL, configuration: Database.Configuration) {
        self.url = url
        self.configuration = configuration
        self.loop = configuration.eventLoopGroup.next()
        self.logger = configuration.logger
        self.clientID = Self.randomClientID()
        loop.execute {
            self.openStore()
            self.setInfo(connected: false, serverTimeOffset: nil)
            self.connect()
        }
    }

    // MARK: Time and push ids

    /// The client's estimate of the server's clock, in ms since the epoch.
    var estimatedServerTime: Int64 {
        Self.now() + shared.withLockedValue { $0.serverTimeOffset }
    }

    static func now() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    /// A new push id (docs/PROTOCOL.md, "push") from the estimated server time.
    func nextPushID() -> String {
        let now = Self.now()
        return shared.withLockedValue { state in
            state.pushIDs.next(now: now + state.serverTimeOffset)
        }
    }

    // MARK: Online / offline

    /// Stops using the network: closes the connection and stops reconnecting. Requests made
    /// meanwhile are queued.
    func goOffline() {
        loop.execute {
            self.wantsOnline = false
            self.reconnectTask?.cancel()
            self.reconnectTask = nil
            self.channel?.close(promise: nil)
            self.connectionAttemptEnded(
                .failure(HearthError(.connectionFailed, "the client was taken offline (goOffline())")))
        }
    }

    /// Resumes connecting after `goOffline()`.
    func goOnline() {
        loop.execute {
            guard !self.wantsOnline else { return }
            self.wantsOnline = true
            self.attempt = 0
            self.roundFailures = []
            self.connect()
        }
    }

    /// The server being used or tried.
    var endpoint: DatabaseURL.Endpoint { url.endpoints[endpointIndex] }

    private func connect() {
        loop.preconditionInEventLoop()
        guard wantsOnline, channel == nil, !connecting else { return }
        connecting = true
        let endpoint = self.endpoint
        logger.debug("connecting", metadata: ["url": "\(endpoint.description)"])
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(configuration.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.addTLSHandler(to: channel, for: endpoint)
                    try channel.pipeline.syncOperations.addHandler(
                        ReceiveCounter(received: self.received, sent: self.sent))
                    try channel.pipeline.syncOperations.addHandler(GreetingCheck(repo: self, endpoint: endpoint))
                    try channel.pipeline.syncOperations.addHandler(
                        LineFrameDecoder(maxLength: Int(Int32.max)))
                    try channel.pipeline.syncOperations.addHandler(ClientHandler(repo: self))
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .whenComplete { result in
                self.connecting = false
                switch result {
                case .success(let channel):
                    if !self.wantsOnline { channel.close(promise: nil) }
                case .failure(let error):
                    self.connectFailed(HearthError.connecting(to: endpoint, error))
                }
            }
    }

    /// Moves on to the URL's next address (round robin); the same one when there is only one.
    private func advanceEndpoint() {
        endpointIndex = (endpointIndex + 1) % url.endpoints.count
    }

    /// Schedules the next connection attempt: exponential backoff from `reconnectMinDelay` up
    /// to `reconnectMaxDelay`, with full jitter over the upper half of the interval; `longest`
    /// takes the interval up to `reconnectMaxDelay` at once.
    private func scheduleReconnect(longest: Bool = false) {
        guard wantsOnline, reconnectTask == nil, channel == nil else { return }
        let minNanos = configuration.reconnectMinDelay.nanoseconds
        let maxNanos = max(minNanos, configuration.reconnectMaxDelay.nanoseconds)
        let exponent = min(attempt, 30)
        var ceiling = min(maxNanos, minNanos.multipliedReportingOverflow(by: Int64(1) << exponent).partialValue)
        if longest { ceiling = maxNanos }
        let delay = Int64.random(in: (ceiling / 2)...max(ceiling / 2, ceiling))
        attempt += 1
        reconnectTask = loop.scheduleTask(in: .nanoseconds(delay)) {
            self.reconnectTask = nil
            self.connect()
        }
    }

    // MARK: Connection events (from ClientHandler, on the loop)

    func channelBecameActive(_ channel: any Channel) {
        guard wantsOnline, self.channel == nil else {
            channel.close(promise: nil)
            return
        }
        self.channel = channel
        if let name = url.databaseName {
            // `use` first; `auth` and the rest follow once the server accepts it.
            chooseDatabase(name, on: channel)
        } else {
            authenticate(on: channel)
        }
    }

    /// Rebuilds the connection's state first, then sends what waited, in order (after the
    /// `auth`, when there is one).
    func sessionReady() {
        guard let channel else { return }
        replayOnDisconnect()
        // Views that showed a result before get their catch-up raised all at once.
        for view in views.values.sorted(by: { $0.path.description < $1.path.description }) where !view.path.isInfo {
            if subscribe(view), view.shown != nil { catchingUp.insert(view.id) }
        }
        let waiting = queued
        queued = []
        for out in waiting { write(out) }
        channel.flush()
    }

    func channelBecameInactive(_ channel: any Channel) {
        guard self.channel === channel else { return }
        self.channel = nil
        securitySessionEnded()
        let refusal = choice.refusal
        choice = DatabaseChoice()
        var failedAttempt: HearthError?
        let lost = endpoint
        let cut = serverError
        serverError = nil
        if greeted {
            greeted = false
            logger.debug(
                wantsOnline ? "disconnected; reconnecting" : "disconnected",
                metadata: ["url": "\(endpoint.description)", "error": "\(cut?.description ?? "none")"])
            // The backoff starts over after a connection that ended otherwise or served a while; a
            // server that keeps cutting connections short is tried less and less often.
            let served = greetedAt.map { .now() - $0 >= configuration.reconnectMaxDelay } ?? true
            if cut == nil || served { attempt = 0 }
            if let cut { connectionError = cut }
            // Another server of the URL may be up when this one went away (a cluster node).
            advanceEndpoint()
            shared.withLockedValue { state in
                state.connectedAddress = nil
                state.cluster = nil
            }
        } else if wantsOnline {
            failedAttempt =
                takeChannelFailure()
                ?? HearthError(
                    .connectionFailed,
                    "cannot connect to \(endpoint.description): the connection closed before the server's hello")
        }
        var resend: [Outgoing] = []
        var unsure: [Outgoing] = []
        var refused: [Outgoing] = []
        while var out = inFlight.popFirst() {
            guard out.kind == .request else { continue }
            if cut != nil, out.writeNumber == nil {
                out.serverCuts += 1
                if out.serverCuts >= Self.cutsBeforeGivingUp {
                    refused.append(out)
                    continue
                }
            }
            if out.resendable { resend.append(out) } else { unsure.append(out) }
        }
        queued = resend + queued
        var givenUp: [ClientView] = []
        for view in views.values {
            if cut != nil, view.subscribing || view.syncing != nil {
                view.serverCuts += 1
                if view.serverCuts >= Self.cutsBeforeGivingUp { givenUp.append(view) }
            }
            view.serverRev = knownRev(of: view)
            view.sub = nil
            view.subscribing = false
            view.syncing = nil
            view.live = false
            cacheChanged(view)
        }
        viewsBySub.removeAll()
        catchingUp.removeAll()
        eventGroupRev = nil
        flush()
        if let cut {
            for view in givenUp { cancel(view, Self.givingUp(cut, at: view.path.description)) }
            for out in refused { out.completion(.failure(Self.givingUp(cut, at: nil))) }
        }
        setInfo(connected: false, serverTimeOffset: currentServerTimeOffset)
        for out in unsure {
            out.completion(
                .failure(
                    HearthError(
                        .unavailable,
                        "outcome unknown: the connection to \(lost.description) was lost before the answer")))
        }
        if let refusal, failedAttempt != nil {
            databaseRefused(refusal)
        } else if let failedAttempt {
            connectFailed(failedAttempt)
        } else {
            scheduleReconnect()
        }
    }

    /// The connections in a row the server may cut (`slow_consumer`) while a subscription's
    /// first events or a read's answer are due before the client stops asking: the observers'
    /// cancel blocks, or the read's completion, get the server's error.
    static let cutsBeforeGivingUp = 3

    /// The server's error, saying that it repeated and what to do instead.
    static func givingUp(_ cut: HearthError, at path: String?) -> HearthError {
        let what = path.map { "the first events of the subscription at \($0)" } ?? "the answer"
        var error = HearthError(
            cut.code,
            "\(cut.message) (the server closed the connection \(cutsBeforeGivingUp) times in a row while sending "
                + "\(what); read less at once: a narrower path, a query with a limit, or a shallow read)")
        error.path = path
        return error
    }

    private var currentServerTimeOffset: Int64? {
        infoRoot.child(at: Path([Key(".info"), Key("serverTimeOffset")])).leafValue.flatMap {
            if case .number(.int(let i)) = $0 { return i }
            return nil
        }
    }

    func received(_ line: ByteBuffer, on channel: any Channel) {
        guard self.channel === channel else { return }
        let parsed = line.withUnsafeReadableBytes { bytes in
            Result { () throws(JSONError) -> JSONValue in try JSONParser.parse(bytes) }
        }
        guard case .success(let json) = parsed, case .object = json else {
            logger.debug("unreadable line from the server")
            return
        }
        if json["id"] == nil, let sub = json["sub"]?.int64Value {
            // One write's events are raised together: a new revision ends the group.
            let rev = json["rev"]?.int64Value
            if let group = eventGroupRev, group != rev { flush() }
            eventGroupRev = rev
            handleEvent(json, sub: Int(sub))
            return
        }
        eventGroupRev = nil
        flush()
        if let rev = json["rev"]?.int64Value { noteRev(UInt64(clamping: rev)) }
        if json["id"] != nil {
            guard let out = inFlight.popFirst() else {
                logger.debug("a response without a request")
                return
            }
            if json["ok"]?.boolValue == true {
                out.completion(.success(json))
            } else {
                out.completion(.failure(HearthError(wire: json["error"] ?? .null, request: out.body)))
            }
        } else {
            switch json["event"]?.stringValue {
            case "hello":
                guard !choice.awaitingAnswer else {
                    // It takes effect once the server accepts the URL's database.
                    choice.hello = json
                    return
                }
                helloArrived(json)
            case "cluster":
                clusterChanged(json["cluster"] ?? .null)
            case "goaway":
                channel.close(promise: nil)
            case "error":
                // The server is about to close the connection (e.g. `slow_consumer`).
                let error = HearthError(wire: json["error"] ?? .null)
                serverError = error
                logger.debug("the server is closing the connection", metadata: ["error": "\(error.description)"])
            case "auth_revoked":
                authRevoked(json)
            default:
                logger.debug("server event", metadata: ["line": "\(json.jsonString)"])
            }
        }
    }

    /// The connection is greeted: the server's hello arrived (and, with a database in the URL,
    /// the server accepted it). `.info/connected` turns true and `waitForConnection` returns.
    func helloArrived(_ json: JSONValue) {
        // `attempt` (the backoff) starts over when this connection ends, unless the server cuts
        // it short (`channelBecameInactive`).
        roundFailures = []
        greetedAt = .now()
        logger.debug("connected", metadata: ["url": "\(endpoint.description)"])
        let serverTime = json["serverTime"]?.int64Value ?? Self.now()
        let offset = serverTime - Self.now()
        let cluster = json["cluster"].flatMap(ClusterInfo.init(wire:))
        let address = endpoint.address
        // Before the waiters run: `waitForConnection` returns with the address known.
        shared.withLockedValue { state in
            state.serverTimeOffset = offset
            state.connectedAddress = address
            state.cluster = cluster
        }
        greeted = true
        connectionAttemptEnded(.success(()))
        setInfo(connected: true, serverTimeOffset: offset)
        // The server closes a connection that sends no request soon after it opens
        // (`firstRequestTimeoutSeconds`); one with nothing to ask yet sends a ping.
        if inFlight.isEmpty { send(.session, [JSONMember("op", .string("ping"))]) { _ in } }
    }

    /// The end of one read from the socket: the events gathered so far are raised.
    func readComplete(on channel: any Channel) {
        guard self.channel === channel else { return }
        eventGroupRev = nil
        flush()
    }

    /// Whether the server's hello has arrived on the current connection (loop only).
    var isConnected: Bool { greeted }

    // MARK: Connection state

    /// Calls `completion` once connected (at once if the client already is), or with the error
    /// of the next failed attempt (at once with the last one if the latest attempt failed).
    func waitForConnection(_ completion: @escaping @Sendable (Result<Void, HearthError>) -> Void) {
        loop.execute {
            if self.greeted {
                completion(.success(()))
            } else if let error = self.connectionError, !self.connecting, self.channel == nil {
                completion(.failure(error))
            } else {
                self.connectionWaiters.append(completion)
            }
        }
    }

    /// The last connection attempt's failure, nil while connected (from any thread).
    var lastConnectionError: EventLoopFuture<HearthError?> {
        loop.submit { self.greeted ? nil : self.connectionError }
    }

    /// Records a failed attempt and logs it with its reason, then tries the URL's next address
    /// at once; once every address failed in this round, reports the round's failure (to
    /// `waitForConnection`) and starts the next round after the backoff.
    private func connectFailed(_ error: HearthError) {
        logger.debug(
            "\(error.message); retrying",
            metadata: ["url": "\(endpoint.description)", "code": "\(error.code.rawValue)"])
        roundFailures.append(error)
        advanceEndpoint()
        guard roundFailures.count >= url.endpoints.count else {
            connect()
            return
        }
        let failures = roundFailures
        roundFailures = []
        connectionAttemptEnded(.failure(Self.roundFailure(failures)))
        scheduleReconnect()
    }

    /// The server refused the URL's database (`not_found`, `bad_request`, …): the failure is
    /// reported at once, without trying the URL's other addresses (the servers of one cluster
    /// hold the same databases), and the next attempt waits the longest backoff,
    /// `reconnectMaxDelay` — the answer stands until an admin creates the database.
    private func databaseRefused(_ error: HearthError) {
        logger.debug(
            "\(error.message); retrying in a while",
            metadata: ["url": "\(endpoint.description)", "code": "\(error.code.rawValue)"])
        roundFailures = []
        advanceEndpoint()
        connectionAttemptEnded(.failure(error))
        scheduleReconnect(longest: true)
    }

    /// One error for a round of failed attempts: the attempt's own for a single address;
    /// otherwise every attempt's message in order, with their common code (`connection_failed`
    /// when they differ).
    static func roundFailure(_ failures: [HearthError]) -> HearthError {
        guard let first = failures.first, failures.count > 1 else {
            return failures.first ?? HearthError(.connectionFailed, "no connection attempt was made")
        }
        let code = failures.allSatisfy { $0.code == first.code } ? first.code : .connectionFailed
        return HearthError(code, failures.map(\.message).joined(separator: "; "))
    }

    private func connectionAttemptEnded(_ result: Result<Void, HearthError>) {
        switch result {
        case .success: connectionError = nil
        case .failure(let error): connectionError = error
        }
        let waiters = connectionWaiters
        connectionWaiters = []
        for waiter in waiters { waiter(result) }
    }

    // MARK: Requests

    /// Sends a user request from any thread; `completion` runs on the loop. A request that is
    /// not `resendable` fails with `unavailable` ("outcome unknown") when its connection drops
    /// before the answer, instead of being sent again.
    func request(
        _ body: [JSONMember], resendable: Bool = true,
        _ completion: @escaping @Sendable (Result<JSONValue, HearthError>) -> Void
    ) {
        loop.execute { self.send(.request, body, resendable: resendable, completion) }
    }

    /// Sends now when connected; queues user requests otherwise.
    func send(
        _ kind: Outgoing.Kind, _ body: [JSONMember], writeNumber: UInt64? = nil, resendable: Bool = true,
        _ completion: @escaping (Result<JSONValue, HearthError>) -> Void
    ) {
        loop.preconditionInEventLoop()
        let out = Outgoing(
            kind: kind, body: body, writeNumber: writeNumber, resendable: resendable, completion: completion)
        if let channel {
            guard !holdWhileAuthenticating(out) else { return }
            write(out)
            channel.flush()
        } else if kind == .request {
            queued.append(out)
        }
    }

    func write(_ out: Outgoing) {
        guard let channel else { return }
        let id = nextRequestID
        nextRequestID += 1
        inFlight.append(out)
        channel.write(channel.allocator.buffer(bytes: out.line(id: id)), promise: nil)
    }

    /// Runs `work` on the callback queue.
    func callback(_ work: @escaping @Sendable () -> Void) {
        configuration.callbackQueue.async(execute: work)
    }

    /// Test hook: whether the connection is up and how many user requests wait for one.
    var connectionStateForTesting: EventLoopFuture<(connected: Bool, queued: Int)> {
        loop.submit { (self.channel != nil, self.queued.count) }
    }
}
