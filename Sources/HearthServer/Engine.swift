import HearthCore
import HearthJSON
import HearthProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// What the engine sends back to a connection, in order: responses to its requests (encoded on
/// the connection's thread) and pre-encoded lines (events).
enum Outbound: Sendable {
    case response(RequestID, ResponseBody)
    case line([UInt8])
}

/// How the engine reaches a connection: its id and a function that hands a batch of output to
/// the connection's own event loop.
struct SessionLink: Sendable {
    let id: UInt64
    let deliver: @Sendable ([Outbound]) -> Void
}

/// Work handed to the engine.
enum Submission: Sendable {
    case request(SessionLink, Request)
    case disconnected(sessionID: UInt64)
    /// Completes when everything submitted before it has been applied and delivered.
    case barrier(EventLoopPromise<Void>)
}

/// The single writer: owns the database and every connection's engine-side state, and applies
/// all submissions in one total order on its own thread.
///
/// Submissions are queued under a lock from any thread; the engine drains the whole queue in
/// one turn (a batch), then hands each connection its outputs in one delivery. A pipelining
/// client therefore gets many requests per engine turn, and (with durability) one flush per
/// batch covers them all.
final class Engine: @unchecked Sendable {
    // Everything below `inbox` is confined to `loop`.
    let loop: any EventLoop
    private let inbox = NIOLockedValueBox(Inbox())
    private var database: Database
    private var onDisconnect: [UInt64: OnDisconnectQueue] = [:]
    private var pushIDs = PushIDGenerator()
    private let logger: Logger
    private let clock: @Sendable () -> Int64

    private struct Inbox {
        var items: [Submission] = []
        var scheduled = false
    }

    init(loop: any EventLoop, database: Database, logger: Logger, clock: @escaping @Sendable () -> Int64) {
        self.loop = loop
        self.database = database
        self.logger = logger
        self.clock = clock
    }

    /// Queues work; safe from any thread. Order is kept per caller.
    func submit(_ items: [Submission]) {
        guard !items.isEmpty else { return }
        let schedule = inbox.withLockedValue { inbox -> Bool in
            inbox.items.append(contentsOf: items)
            if inbox.scheduled { return false }
            inbox.scheduled = true
            return true
        }
        if schedule { loop.execute { self.drain() } }
    }

    func submit(_ item: Submission) { submit([item]) }

    /// Resolves once everything submitted so far has been applied and handed to connections.
    func barrier() -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        submit(.barrier(promise))
        return promise.futureResult
    }

    /// The whole tree and its revision, as of the next engine turn.
    func snapshot() -> EventLoopFuture<(Node, UInt64)> {
        loop.submit { (self.database.root, self.database.rev) }
    }

    // MARK: Engine thread

    private func drain() {
        loop.preconditionInEventLoop()
        let items = inbox.withLockedValue { inbox -> [Submission] in
            let items = inbox.items
            inbox.items = []
            inbox.scheduled = false
            return items
        }
        let now = clock()
        var outputs: [UInt64: (SessionLink, [Outbound])] = [:]
        var barriers: [EventLoopPromise<Void>] = []
        for item in items {
            switch item {
            case .request(let session, let request):
                let body = handle(request.operation, session: session.id, now: now)
                outputs[session.id, default: (session, [])].1.append(.response(request.id, body))
            case .disconnected(let sessionID):
                runOnDisconnect(sessionID, now: now)
            case .barrier(let promise):
                barriers.append(promise)
            }
        }
        for (session, batch) in outputs.values { session.deliver(batch) }
        for promise in barriers { promise.succeed() }
    }

    private func handle(_ operation: HearthProtocol.Operation, session: UInt64, now: Int64) -> ResponseBody {
        switch operation {
        case .get(let path, let options):
            return .value(database.root.child(at: path), rev: database.rev, options: options)
        case .write(let write, let kind):
            switch database.apply(write, now: now) {
            case .committed(let rev, _):
                return kind == .transaction ? .transactionCommitted(rev: rev) : .committed(rev: rev)
            case .stale(let current):
                return .stale(current: current)
            }
        case .push(let path, let value):
            let key = pushIDs.next(now: now)
            switch database.apply(.set(path: path.appending(Key(key)), value: value), now: now) {
            case .committed(let rev, _): return .pushed(key: key, rev: rev)
            case .stale: return .failure(DatabaseError(.internal, "push did not commit"))
            }
        case .onDisconnect(let action):
            var queue = onDisconnect[session] ?? OnDisconnectQueue()
            switch action {
            case .set(let path, let value): queue.set(path, value)
            case .update(let path, let values): queue.update(path, values)
            case .cancel(let path): queue.cancel(path)
            }
            onDisconnect[session] = queue.isEmpty ? nil : queue
            return .done
        case .ping:
            return .pong(serverTime: now)
        }
    }

    private func runOnDisconnect(_ sessionID: UInt64, now: Int64) {
        guard let queue = onDisconnect.removeValue(forKey: sessionID),
            let write = queue.write(limits: database.limits)
        else { return }
        if case .committed(let rev, _) = database.apply(write, now: now) {
            logger.debug("ran onDisconnect operations", metadata: ["connection": "\(sessionID)", "rev": "\(rev)"])
        }
    }
}
