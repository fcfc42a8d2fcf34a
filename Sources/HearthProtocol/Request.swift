public import HearthCore
public import HearthJSON

/// A request id as the client sent it: a number or a string, echoed in the response; `null`
/// when absent.
public typealias RequestID = JSONValue

/// One decoded request line.
///
/// Its fields live in one immutable box, so that the copies a request goes through between the
/// decoder and the engine are a reference count each; a setter (used rarely: the HTTP API and
/// cluster forwarding) makes a new box.
public struct Request: Sendable {
    private struct Values: Sendable {
        let id: RequestID
        let operation: Operation
        var answerWithStoredValue = false
        var writeID: WriteID?
        var source: [UInt8]?
    }

    private final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private var box: Box

    /// Replaces the box with a changed copy of its values.
    private mutating func change(_ edit: (inout Values) -> Void) {
        var values = box.values
        edit(&values)
        box = Box(values)
    }

    public var id: RequestID { box.values.id }
    public var operation: Operation { box.values.operation }
    /// Answer a committed write with the value now stored at its path (`ResponseBody.stored`)
    /// rather than with its revision alone: what the HTTP API returns for PUT, POST and PATCH.
    public var answerWithStoredValue: Bool {
        get { box.values.answerWithStoredValue }
        set { change { $0.answerWithStoredValue = newValue } }
    }
    /// The write id (`wid`) of a write, push or transaction (docs/PROTOCOL.md, "Write ids").
    public var writeID: WriteID? {
        get { box.values.writeID }
        set { change { $0.writeID = newValue } }
    }
    /// The request object's JSON text as received, kept only by a cluster node
    /// (`RequestDecoder.keepsSource`), which forwards writes to its leader as they were sent. (The
    /// bytes, not a tree: a copy of the line costs a fraction of rebuilding its object.)
    public var source: [UInt8]? {
        get { box.values.source }
        set { change { $0.source = newValue } }
    }

    public init(id: RequestID, operation: Operation, writeID: WriteID? = nil, source: [UInt8]? = nil) {
        box = Box(Values(id: id, operation: operation, writeID: writeID, source: source))
    }
}

/// What a request asks for, validated and ready for the engine.
///
/// Indirect: each case's payload lives in one box, so a copy of an operation (the engine makes
/// several per request) is one reference count rather than one per field of its largest case.
public indirect enum Operation: Sendable {
    /// Read the node at `path` (see `ReadOptions`).
    case get(path: Path, options: ReadOptions)
    /// A write (set, update, remove, setPriority, transaction).
    case write(Write, kind: WriteKind)
    /// Store `value` under a new push id below `path` (validated for that depth).
    case push(path: Path, value: PreparedValue)
    /// Subscribe to the view (`path`, `query`) for the given event types. `ruleQuery` is the
    /// query as the rules' `query` variable sees it (nil without a query). `cache` (nil: off) is
    /// cache mode, with the revision to resume from when there is one.
    case subscribe(path: Path, query: QuerySpec, events: EventMask, ruleQuery: RuleQuery?, cache: CacheMode?)
    /// A Firebase event stream (the HTTP API's Server-Sent Events): like `subscribe`, but
    /// delivered as `put`/`patch` events in `format`. Without a query (nil) each write is shaped
    /// as it was made; with one, each change of the window is one `patch` (docs/REST.md,
    /// "Streaming (Server-Sent Events)").
    ///
    /// `firebase` makes it a listen of Firebase's realtime protocol instead: the same events, as
    /// that protocol's data pushes, the first one before the answer and only when the client does
    /// not already hold the data (docs/firebase-sdk.md).
    case stream(
        path: Path, query: QuerySpec?, format: Node.Format, ruleQuery: RuleQuery?, firebase: FirebaseListen? = nil)
    /// End a subscription of this connection.
    case unsubscribe(sub: Int)
    /// Register, edit or cancel an onDisconnect operation for this connection.
    case onDisconnect(OnDisconnectAction)
    /// Answer with the server time.
    case ping
    /// Change who the connection is (`auth` / `unauth`, docs/security.md, "Identity").
    case auth(AuthStep)
    /// Replace the rules (admin): compiled and type-checked already, on the I/O thread.
    case setRules(RuleSet)
    /// Return the current rules (admin).
    case getRules
    /// Evaluate `operation` as `identity` against the current data without performing it (admin).
    case simulate(identity: AuthContext?, operation: Operation)
    /// Replication, forwarding and the operator's cluster requests (`ClusterRequest`).
    case cluster(ClusterRequest)
    /// A connection's choice of database, or an admin's database lifecycle request: answered by
    /// the server, which holds the databases, never by one database's engine.
    case database(DatabaseRequest)
}

/// What a Firebase realtime-protocol listen adds to an event stream.
public struct FirebaseListen: Sendable {
    /// The hash of the data the client holds for the listen (`""`: none): when the data has that
    /// hash, its first push is not sent.
    public var knownHash: String

    public init(knownHash: String) { self.knownHash = knownHash }
}

/// `use`, `listDatabases`, `createDatabase`, `databaseInfo` and `deleteDatabase`
/// (docs/PROTOCOL.md, "Databases"), and the triggers' admin requests. Names are checked by the
/// server, which knows the rules.
public enum DatabaseRequest: Sendable, Equatable {
    /// The connection's database, chosen by its first request.
    case use(String)
    case list
    case create(String)
    case info(String)
    /// `purge`: remove the data rather than moving it into the trash.
    case delete(String, purge: Bool)
    /// A request about the triggers of the connection's database.
    case triggers(TriggerRequest)
}

/// `triggers`, `addTrigger`, `removeTrigger`, `deadLetters` and `replayTrigger`
/// (docs/PROTOCOL.md, "Triggers"): an admin's requests about the triggers of one database.
public enum TriggerRequest: Sendable, Equatable {
    /// Every trigger with its status.
    case list
    /// Adds the trigger the object defines (the configuration's trigger object, which may carry
    /// its secret inline as `secret`); the server parses it.
    case add(JSONValue)
    /// Removes a trigger made through the admin API.
    case remove(name: String)
    /// The trigger's dead letters, oldest first, at most `limit`.
    case deadLetters(name: String, limit: Int)
    /// Sends the trigger's dead letters again: all of them (nil) or those with the given ids.
    case replay(name: String, ids: [String]?)

    /// The dead letters a `deadLetters` request returns when it names no `limit`.
    public static let defaultDeadLetterLimit = 100
    /// The most dead letters one `deadLetters` request returns.
    public static let maxDeadLetterLimit = 10_000
}

/// The steps of authentication. The wire's `auth` decodes to `.token`; the connection verifies it
/// off the engine thread and hands the engine `.verified` or `.refused`, so the engine only
/// switches identities, in request order.
public enum AuthStep: Sendable {
    /// A token as received (JWT or admin secret), not yet verified.
    case token(String)
    /// A verified identity.
    case verified(AuthContext)
    /// A token that failed verification (`invalid_token`, or `overloaded` when throttled).
    case refused(DatabaseError)
    /// `unauth`: back to unauthenticated.
    case signOut
    /// The token was the cluster secret: a peer node (never decoded from the wire).
    case peer
}

/// A subscription in cache mode (`"cache":true`): the client keeps the result and derives
/// `value` itself, so the server sends `value` only when child events cannot express a change
/// (docs/PROTOCOL.md, "Cache mode and resuming").
public struct CacheMode: Sendable, Equatable {
    /// `since`: the revision of the result the client already has; the server then sends only
    /// what changed after it, when it still can.
    public var since: UInt64?

    public init(since: UInt64? = nil) { self.since = since }
}

/// Which write op a request was, for its response shape.
public enum WriteKind: Sendable {
    case set, update, remove, setPriority, transaction
}

/// Options of a `get`.
public struct ReadOptions: Sendable {
    /// Ordering, range and limit; nil reads the node as it is.
    public var query: QuerySpec?
    public var shallow = false
    public var format: Node.Format = .plain
    public var hash = false
    /// The query as the rules' `query` variable sees it (nil without a query).
    public var ruleQuery: RuleQuery?

    public init(shallow: Bool = false, format: Node.Format = .plain, hash: Bool = false) {
        self.shallow = shallow
        self.format = format
        self.hash = hash
    }
}

/// An onDisconnect request.
public enum OnDisconnectAction: Sendable {
    case set(Path, JSONValue)
    case update(Path, [(path: Path, value: JSONValue)])
    case cancel(Path)
}

/// A set of event types a subscription asked for.
public struct EventMask: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public init(_ type: EventType) {
        switch type {
        case .value: self = .value
        case .childAdded: self = .childAdded
        case .childChanged: self = .childChanged
        case .childRemoved: self = .childRemoved
        case .childMoved: self = .childMoved
        }
    }

    public static let value = EventMask(rawValue: 1)
    public static let childAdded = EventMask(rawValue: 2)
    public static let childChanged = EventMask(rawValue: 4)
    public static let childRemoved = EventMask(rawValue: 8)
    public static let childMoved = EventMask(rawValue: 16)

    public func contains(_ type: EventType) -> Bool { contains(EventMask(type)) }
}
