import HearthCore
import HearthJSON
import HearthProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// What the engine sends back to a connection, in order: responses to its requests (encoded on
/// the connection's thread) and events (a body encoded once and shared by all subscribers of a
/// view, behind each subscriber's own `{"sub":S,` prefix).
enum Outbound: Sendable {
    case response(RequestID, ResponseBody)
    case event(sub: Int, body: ByteBuffer)
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
    private let views = ViewRegistry()
    private let rules: IndexRules
    private let strictIndexes: Bool
    /// Locations already warned about (one log line per location and order).
    private var warnedIndexes: Set<String> = []
    private let allocator = ByteBufferAllocator()
    private let logger: Logger
    private let clock: @Sendable () -> Int64

    private struct Inbox {
        var items: [Submission] = []
        var scheduled = false
    }

    init(
        loop: any EventLoop, database: Database, rules: IndexRules, strictIndexes: Bool, logger: Logger,
        clock: @escaping @Sendable () -> Int64
    ) {
        self.loop = loop
        self.database = database
        self.rules = rules
        self.strictIndexes = strictIndexes
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
                handle(request, session: session, now: now, outputs: &outputs)
            case .disconnected(let sessionID):
                views.removeSession(sessionID)
                runOnDisconnect(sessionID, now: now, outputs: &outputs)
            case .barrier(let promise):
                barriers.append(promise)
            }
        }
        for (session, batch) in outputs.values { session.deliver(batch) }
        for promise in barriers { promise.succeed() }
    }

    private func handle(
        _ request: Request, session: SessionLink, now: Int64, outputs: inout [UInt64: (SessionLink, [Outbound])]
    ) {
        func respond(_ body: ResponseBody) {
            outputs[session.id, default: (session, [])].1.append(.response(request.id, body))
        }
        switch request.operation {
        case .get(let path, let options):
            guard let query = options.query else {
                respond(.value(database.root.child(at: path), rev: database.rev, options: options))
                return
            }
            switch indexCheck(query.order, at: path) {
            case .failure(let error):
                respond(.failure(error))
            case .success(let warning):
                let location = database.root.child(at: path)
                let result: QueryResult
                if query.isUnfiltered, location.isLeaf {
                    result = .node(location)
                } else {
                    // A declared index is built on first use and maintained from then on.
                    if warning == nil, views.index(for: query.order, at: path) == nil, query.order != .key {
                        views.declareIndex(query.order, at: path, data: database.root)
                    }
                    let index = views.index(for: query.order, at: path)
                    result = .children(QueryEvaluator.window(query, of: location, index: index))
                }
                respond(.window(result, rev: database.rev, format: options.format, warning: warning))
            }
        case .write(let write, let kind):
            switch database.apply(write, now: now) {
            case .committed(let logged, let before):
                let rev = logged.rev
                views.apply(paths: write.paths, before: before, after: database.root, rev: rev, outputs: &outputs)
                respond(kind == .transaction ? .transactionCommitted(rev: rev) : .committed(rev: rev))
            case .stale(let current):
                respond(.stale(current: current))
            }
        case .push(let path, let value):
            let key = pushIDs.next(now: now)
            let write = Write.set(path: path.appending(Key(key)), value: value)
            switch database.apply(write, now: now) {
            case .committed(let logged, let before):
                let rev = logged.rev
                views.apply(paths: write.paths, before: before, after: database.root, rev: rev, outputs: &outputs)
                respond(.pushed(key: key, rev: rev))
            case .stale:
                respond(.failure(DatabaseError(.internal, "push did not commit")))
            }
        case .subscribe(let path, let query, let events):
            switch indexCheck(query.order, at: path) {
            case .failure(let error):
                respond(.failure(error))
            case .success(let warning):
                let (sub, view) = views.subscribe(
                    session: session, path: path, query: query, events: events, data: database.root,
                    declared: rules.isDeclared(query.order, at: path))
                respond(.subscribed(sub: sub, rev: database.rev, warning: warning))
                for event in view.initialEvents() where events.contains(event.type) {
                    let body =
                        event.type == .value
                        ? EventEncoder.valueEventBody(view, rev: database.rev)
                        : EventEncoder.childEventBody(event, rev: database.rev)
                    outputs[session.id, default: (session, [])].1.append(
                        .event(sub: sub, body: allocator.buffer(bytes: body)))
                }
            }
        case .unsubscribe(let sub):
            if views.unsubscribe(session: session.id, sub: sub) {
                respond(.done)
            } else {
                respond(.failure(DatabaseError(.notFound, "this connection has no subscription \(sub)")))
            }
        case .onDisconnect(let action):
            var queue = onDisconnect[session.id] ?? OnDisconnectQueue()
            switch action {
            case .set(let path, let value): queue.set(path, value)
            case .update(let path, let values): queue.update(path, values)
            case .cancel(let path): queue.cancel(path)
            }
            onDisconnect[session.id] = queue.isEmpty ? nil : queue
            respond(.done)
        case .ping:
            respond(.pong(serverTime: now))
        }
    }

    /// Whether a query ordered by `order` at `path` may run: declared indexes pass; others pass
    /// with a warning (logged once per location), or fail under `strictIndexes`.
    private func indexCheck(_ order: QueryOrder, at path: Path) -> Result<String?, DatabaseError> {
        if rules.isDeclared(order, at: path) { return .success(nil) }
        let name: String
        switch order {
        case .value: name = ".value"
        case .child(let child): name = child.segments.map(\.string).joined(separator: "/")
        case .key, .priority: return .success(nil)
        }
        let advice = "add \".indexOn\": \"\(name)\" at \(path) to the rules"
        if strictIndexes {
            return .failure(DatabaseError(.indexNotDefined, "no index for this query: \(advice)"))
        }
        if warnedIndexes.insert("\(path) \(name)").inserted {
            logger.warning("query on an undeclared index", metadata: ["path": "\(path)", "orderBy": "\(name)"])
        }
        return .success("index_not_defined: \(advice)")
    }

    private func runOnDisconnect(_ sessionID: UInt64, now: Int64, outputs: inout [UInt64: (SessionLink, [Outbound])]) {
        guard let queue = onDisconnect.removeValue(forKey: sessionID),
            let write = queue.write(limits: database.limits)
        else { return }
        if case .committed(let logged, let before) = database.apply(write, now: now) {
            let rev = logged.rev
            views.apply(paths: write.paths, before: before, after: database.root, rev: rev, outputs: &outputs)
            logger.debug("ran onDisconnect operations", metadata: ["connection": "\(sessionID)", "rev": "\(rev)"])
        }
    }
}
