import HearthCore
import HearthJSON

/// Where a trigger was declared: in the configuration file (read-only to the admin API), or
/// through the admin API (kept in the database's folder, `triggers/triggers.json`).
public enum TriggerSource: String, Sendable {
    case configuration, api
}

/// How a trigger is doing.
public enum TriggerState: String, Sendable {
    /// Delivered everything logged so far.
    case idle
    /// Deliveries in flight, none failing.
    case delivering
    /// The oldest undelivered event failed and waits for its next attempt.
    case retrying
    /// The log it needed passed the backlog bound and was dropped: events were lost
    /// (`lostEvents` says how many revisions). Stays until the admin clears it (`replay`
    /// or removing the trigger).
    case lost
}

/// One trigger's configuration and progress, as `hearth triggers status`, the admin API, the
/// console and the metrics show it. Secrets never appear here.
public struct TriggerStatus: Sendable {
    public var name: String
    public var path: String
    public var kinds: [TriggerKind]
    public var url: String
    public var source: TriggerSource
    public var state: TriggerState
    /// Every event of the revisions up to here is delivered (or dead-lettered).
    public var deliveredRev: UInt64
    /// The last revision in the log that the runner may read.
    public var headRev: UInt64
    /// How old the oldest undelivered event is, in seconds (0 when none waits).
    public var lagSeconds: Double
    /// Since the daemon started.
    public var delivered: Int
    public var failed: Int
    public var retried: Int
    public var inFlight: Int
    /// Events in the dead-letter list now.
    public var deadLetters: Int
    /// Revisions whose events were lost to the backlog bound (since the trigger was made).
    public var lostRevisions: UInt64
    public var lastError: String?

    public var lagRevisions: UInt64 { headRev > deliveredRev ? headRev - deliveredRev : 0 }

    public var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("name", .string(name)), JSONMember("path", .string(path)),
            JSONMember("on", .array(kinds.map { .string($0.rawValue) })), JSONMember("url", .string(url)),
            JSONMember("source", .string(source.rawValue)), JSONMember("state", .string(state.rawValue)),
            JSONMember("deliveredRev", .int(Int64(clamping: deliveredRev))),
            JSONMember("headRev", .int(Int64(clamping: headRev))),
            JSONMember("lagRevisions", .int(Int64(clamping: lagRevisions))),
            JSONMember("lagSeconds", .double(lagSeconds)), JSONMember("delivered", .int(Int64(delivered))),
            JSONMember("failed", .int(Int64(failed))), JSONMember("retried", .int(Int64(retried))),
            JSONMember("inFlight", .int(Int64(inFlight))), JSONMember("deadLetters", .int(Int64(deadLetters))),
            JSONMember("lostRevisions", .int(Int64(clamping: lostRevisions))),
        ]
        members.append(JSONMember("lastError", lastError.map { .string($0) } ?? .null))
        return .object(members)
    }
}

/// An event that failed for longer than its trigger's `maxAgeSeconds`, kept with its body so
/// that `replay` sends exactly what was first sent.
public struct DeadLetter: Sendable {
    public var id: String
    public var rev: UInt64
    public var path: String
    public var kind: TriggerKind
    /// When it was moved to the list (ms since the epoch).
    public var deadAt: Int64
    public var attempts: Int
    public var lastError: String
    /// The delivery's body, as signed.
    public var body: [UInt8]

    public var json: JSONValue {
        .object([
            JSONMember("id", .string(id)), JSONMember("rev", .int(Int64(clamping: rev))),
            JSONMember("path", .string(path)), JSONMember("kind", .string(kind.rawValue)),
            JSONMember("deadAt", .int(deadAt)), JSONMember("attempts", .int(Int64(attempts))),
            JSONMember("lastError", .string(lastError)),
        ])
    }
}

/// What the admin surfaces (line protocol, REST, CLI, console) ask of one database's triggers.
/// Every call is made for an admin; errors are `DatabaseError`s worded for the user
/// (`.notFound` for an unknown trigger, `.badRequest` for a bad definition, a name already
/// taken, or a configured trigger that would be removed).
public protocol TriggerControl: Sendable {
    /// Every trigger of the database, configured ones first, then by name.
    func statuses() -> [TriggerStatus]
    /// Adds a trigger made through the admin API; it starts at the log's current end (it is
    /// not sent what was written before it existed).
    func add(_ settings: TriggerSettings) throws(DatabaseError)
    /// Removes a trigger made through the admin API, with its cursor and dead letters.
    func remove(_ name: String) throws(DatabaseError)
    /// The trigger's dead letters, oldest first, at most `limit`.
    func deadLetters(_ name: String, limit: Int) throws(DatabaseError) -> [DeadLetter]
    /// Sends the dead letters again (all of them, or those with the given ids), in their
    /// order, ahead of new events; those delivered leave the list. Also clears a `lost`
    /// state. Returns how many were queued.
    func replay(_ name: String, ids: [String]?) throws(DatabaseError) -> Int
}
