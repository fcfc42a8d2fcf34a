import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import Logging
import NIOCore

/// What a Firebase session needs from the transport that carries it (a WebSocket, or long
/// polling): somewhere to put messages, and a way to end.
protocol FirebaseTransport: AnyObject {
    /// Queues one protocol message for the client.
    func send(_ message: [UInt8])
    /// Queues one push: a listen's prefix, then a body shared by every listener of its view.
    func send(prefix: [UInt8], body: ByteBuffer)
    /// Hands what was queued to the client, then holds the connection to its bounds.
    func flush()
    /// Ends the connection; `refusal` says why when the client must not come back.
    func end(refusal: String?)
    /// The requests waiting for the engine changed: the transport may read again.
    func pendingShrank()
}

/// One client of Firebase's realtime protocol (docs/firebase-sdk.md), whatever carries it: its
/// requests become the engine's operations (`FirebaseInbound`), and the engine's answers and
/// events become the protocol's responses and pushes, each event body encoded once per view and
/// change (`StreamEvents`). Confined to its event loop.
///
/// The engine answers a session's requests in order, so `pending` says which request each answer
/// is for. A listen's first data arrives before its answer, for a subscription the session has not
/// heard of yet: it belongs to the listen at the front of `pending`.
final class FirebaseSession {
    /// A request the engine will answer.
    enum Pending {
        case listen(Int64, FirebaseListenKey, query: JSONValue?)
        /// A write (`p`, `m`); for a transaction, where a `datastale` answer pushes the current
        /// value first.
        case write(Int64, stalePath: Path?)
        case get(Int64)
        case auth(Int64)
        case signOut(Int64)
        /// An onDisconnect request.
        case plain(Int64)
        /// The end of subscription `sub` (an unlisten, answered `ok` when it has a number; or a
        /// listen replaced, or unlistened before its answer): the session keeps pushing the
        /// listen's data until the engine has ended it, then forgets it.
        case unsubscribe(Int64?, sub: Int)
        /// An answer the session gives itself, sent in its place among the engine's.
        case ready([UInt8])

        var isReady: Bool {
            if case .ready = self { return true }
            return false
        }
    }

    /// A live listen.
    struct Listen {
        let key: FirebaseListenKey
        /// The query object as the client sent it, for a revocation push.
        let query: JSONValue?
        /// `{"t":"d","d":{"b":{` with the tag: written before each shared push body.
        let prefix: [UInt8]
    }

    /// The engine's id for the session (the connection's id).
    let id: UInt64
    let loop: any EventLoop
    let databases: DatabaseRegistry
    /// The database `ns` named (nil: the default one).
    let databaseName: String?
    let configuration: ServerConfiguration
    let security: SecurityState
    let logger: Logger
    let clock: @Sendable () -> Int64
    let decoder: RequestDecoder
    /// The host the client reached, sent back in the hello.
    let host: String
    /// The session id of the hello (unguessable: long polling's upgrade names it).
    let sessionID: String
    let remoteAddress: String
    var writeLimiter: WriteLimits?

    // The state every message touches is `@exclusivity(unchecked)`: only the session's event
    // loop touches it, and no access calls code that could reach it again (as in
    // `ConnectionHandler`).
    /// The transport; the session lets go of it when it ends (the transport holds the session).
    @exclusivity(unchecked) var transport: (any FirebaseTransport)?
    var sessionLink: SessionLink?
    /// The database's engine, once the lease is held.
    var engine: Engine?
    var lease: DatabaseRegistry.Lease?
    /// Messages that arrived before the database was ready (counted with `pending` by the
    /// transport, which stops reading when they are many).
    var early: [[UInt8]] = []

    /// The requests the session holds: waiting for the engine, or for the database to open.
    var backlog: Int { pending.count + early.count }
    @exclusivity(unchecked) var ready = false
    @exclusivity(unchecked) var ended = false
    @exclusivity(unchecked) var pending = CircularBuffer<Pending>()
    /// The last path this session sent (`PathMemo`).
    let paths = PathMemo(copies: !ConnectionHandler.sharesPaths)
    /// Reused to encode the most frequent answer, `ok`.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    /// The JSON parser's stacks, reused from one message to the next.
    @exclusivity(unchecked) var parseWorkspace = JSONParseWorkspace()
    /// Requests read but not yet handed to the engine (`submitQueued`).
    @exclusivity(unchecked) var queued: [Request] = []
    @exclusivity(unchecked) var listens: [Int: Listen] = [:]
    @exclusivity(unchecked) var subscriptionOf: [FirebaseListenKey: Int] = [:]
    /// Listens whose unlisten arrived before their answer: unsubscribed once it comes.
    var unlistenedEarly: Set<FirebaseListenKey> = []
    /// Signed in with a token that verified (no longer limited to `maxUnauthenticatedBodyBytes`).
    @exclusivity(unchecked) var signedIn = false

    init(
        id: UInt64, loop: any EventLoop, databases: DatabaseRegistry, databaseName: String?, host: String,
        remoteAddress: String, writeLimiter: WriteLimits?, configuration: ServerConfiguration,
        security: SecurityState, logger: Logger, clock: @escaping @Sendable () -> Int64
    ) {
        self.id = id
        self.loop = loop
        self.databases = databases
        self.databaseName = databaseName
        self.host = host
        self.remoteAddress = remoteAddress
        self.writeLimiter = writeLimiter
        self.configuration = configuration
        self.security = security
        self.clock = clock
        self.decoder = RequestDecoder(limits: configuration.limits)
        self.sessionID = Self.unguessableID()
        var logger = logger
        logger[metadataKey: "firebase-session"] = "\(id)"
        self.logger = logger
    }

    /// 128 random bits in base 36.
    static func unguessableID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36) + String(generator.next() as UInt64, radix: 36)
    }

    /// Leases the database (`evict` closes the transport when the database is deleted), then
    /// says hello and handles what arrived meanwhile.
    func start(transport: any FirebaseTransport, evict: @escaping @Sendable () -> Void) {
        self.transport = transport
        let bound = NIOLoopBound(self, eventLoop: loop)
        sessionLink = SessionLink(id: id, loop: loop) { outputs in bound.value.receive(outputs) }
        if let now = databases.leaseNow(databaseName, connection: true, evict: evict) {
            opened(now)
        } else {
            databases.lease(databaseName, on: loop, connection: true, evict: evict).assumeIsolated()
                .whenComplete { [self] result in
                    guard !ended else {
                        if case .success(let lease) = result { lease.release() }
                        return
                    }
                    opened(result)
                }
        }
    }

    private func opened(_ result: Result<DatabaseRegistry.Lease, any Error>) {
        switch result {
        case .success(let lease):
            self.lease = lease
            engine = lease.engine
            ready = true
            send(FirebaseOutbound.hello(serverTime: clock(), host: host, session: sessionID))
            let waiting = early
            early = []
            for message in waiting where !ended { received(message) }
            submitQueued()
            transport?.flush()
            transport?.pendingShrank()
        case .failure(let error):
            let reason = (error as? DatabaseError)?.message ?? "\(error)"
            logger.debug("refusing a session", metadata: ["reason": "\(reason)"])
            transport?.end(refusal: reason)
        }
    }

    /// The transport is gone: the engine runs the session's onDisconnect operations.
    func end() {
        guard !ended else { return }
        ended = true
        queued = []
        engine?.submit(.disconnected(sessionID: id))
        lease?.release()
        lease = nil
        sessionLink = nil
        transport = nil
    }

    func send(_ message: [UInt8]) { transport?.send(message) }

    // MARK: Requests

    /// A message too long to keep: answered `too_large` when its request number can be read.
    func receivedOversized(prefix: [UInt8]) {
        let error = DatabaseError(
            .tooLarge, "the message exceeds the maximum message size of \(configuration.maxMessageBytes) bytes")
        engine?.metrics.requestRejected(errorCode: error.code)
        if let number = FirebaseInbound.requestNumber(inPrefix: prefix) {
            reply(FirebaseOutbound.failure(number, error))
        } else {
            reply(FirebaseOutbound.control("e", error.message))
        }
    }

    /// One message from the client.
    func received(_ message: [UInt8]) {
        message.withUnsafeBytes { received(bytes: $0) }
    }

    /// One message from the client, in a buffer (a WebSocket frame's payload), read in place.
    func received(buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { received(bytes: $0) }
    }

    /// One message from the client, its bytes valid only during the call.
    func received(bytes message: UnsafeRawBufferPointer) {
        guard !ended else { return }
        guard ready, let engine, let link = sessionLink else {
            early.append(Array(message))
            return
        }
        if !signedIn, !security.isOpen, message.count > security.limits.maxUnauthenticatedBodyBytes {
            let error = DatabaseError(
                .tooLarge,
                "without auth a message may not exceed \(security.limits.maxUnauthenticatedBodyBytes) bytes (maxUnauthenticatedBodyBytes)"
            )
            if let number = FirebaseInbound.requestNumber(inPrefix: Array(message.prefix(64))) {
                reply(FirebaseOutbound.failure(number, error))
            }
            return
        }
        let inbound: FirebaseInbound
        do {
            inbound = try FirebaseInbound.decode(
                message, decoder: decoder, workspace: &parseWorkspace, paths: paths)
        } catch {
            reply(FirebaseOutbound.control("e", error.message))
            return
        }
        switch inbound {
        case .control(let type):
            // `p` is a ping; the transport-upgrade messages are the transport's.
            if type == "p" { send(FirebaseOutbound.pong) }
        case .refused(let number, let error):
            engine.metrics.requestRejected(errorCode: error.code)
            reply(FirebaseOutbound.failure(number, error))
        case .request(let number, let request):
            serve(request, number: number, engine: engine, link: link)
        }
    }

    func serve(_ request: FirebaseRequest, number: Int64, engine: Engine, link: SessionLink) {
        switch request {
        case .stats, .appCheck:
            reply(FirebaseOutbound.ok(number))
        case .listen(let key, let query, let operation):
            if let old = subscriptionOf.removeValue(forKey: key) {
                // The same listen again: the new one replaces it.
                submit(.unsubscribe(sub: old), pending: .unsubscribe(nil, sub: old), engine: engine, link: link)
            }
            unlistenedEarly.remove(key)
            submit(operation, pending: .listen(number, key, query: query), engine: engine, link: link)
        case .unlisten(let key):
            if let sub = subscriptionOf.removeValue(forKey: key) {
                submit(.unsubscribe(sub: sub), pending: .unsubscribe(number, sub: sub), engine: engine, link: link)
                return
            }
            if pending.contains(where: { if case .listen(_, key, _) = $0 { true } else { false } }) {
                unlistenedEarly.insert(key)
            }
            reply(FirebaseOutbound.ok(number))
        case .operation(let operation):
            if case .write = operation, let refusal = writeLimiter?.take() {
                security.noticeLog.notice(logger, "write rate limit", metadata: ["peer": "\(remoteAddress)"])
                reply(FirebaseOutbound.failure(number, security.writeRateExceeded(refusal)))
                return
            }
            let kind: Pending
            switch operation {
            case .write(.transaction(let path, _, _, _), _): kind = .write(number, stalePath: path)
            case .write: kind = .write(number, stalePath: nil)
            case .get: kind = .get(number)
            default: kind = .plain(number)
            }
            submit(operation, pending: kind, engine: engine, link: link)
        case .auth(let token):
            let databaseSecrets = configuration.databases.settings(
                for: databaseName ?? configuration.databases.defaultName
            ).adminSecrets
            let step: AuthStep
            switch security.authenticate(
                token, from: remoteAddress, now: clock(), logger: logger, databaseSecrets: databaseSecrets)
            {
            case .success(let identity):
                signedIn = true
                step = .verified(identity)
            case .failure(let error):
                step = .refused(error)
            }
            submit(.auth(step), pending: .auth(number), engine: engine, link: link)
        case .unauth:
            submit(.auth(.signOut), pending: .signOut(number), engine: engine, link: link)
        }
    }

    /// Queues a request for the engine; `submitQueued` hands the queue over, once per read.
    func submit(_ operation: HearthProtocol.Operation, pending entry: Pending, engine: Engine, link: SessionLink) {
        pending.append(entry)
        queued.append(Request(id: .null, operation: operation))
        if queued.count >= Submission.burstSlice { submitQueued() }
    }

    /// Hands the engine the requests read since the last call, as one submission.
    func submitQueued() {
        guard !queued.isEmpty, let engine, let link = sessionLink else { return }
        if queued.count == 1 {
            engine.submit(.request(link, queued[0]))
        } else {
            engine.submit(.requests(link, queued))
        }
        queued = []
    }

    /// Drops what the session knows of a subscription that ended.
    func forget(sub: Int) {
        if let listen = listens.removeValue(forKey: sub), subscriptionOf[listen.key] == sub {
            subscriptionOf[listen.key] = nil
        }
    }

    /// Sends an answer the session gives itself after the answers to the requests before it.
    func reply(_ message: [UInt8]) {
        if pending.isEmpty {
            send(message)
        } else {
            pending.append(.ready(message))
        }
    }
}
