public import HearthJSON

/// One trigger of a database and how it is doing, as `Database.listTriggers()` and
/// `addTrigger(_:)` report it (docs/PROTOCOL.md, "Triggers"). Its secret never appears.
public struct TriggerInfo: Sendable, Equatable {
    /// Its name, unique in its database.
    public let name: String
    /// Its path pattern, e.g. `/messages/{id}`.
    public let path: String
    /// The kinds of change it delivers: `create`, `update`, `delete`.
    public let kinds: [String]
    /// Where its deliveries are POSTed.
    public let url: String
    /// `configuration` (the server's configuration file; not removable through the API) or
    /// `api` (added through the admin API).
    public let source: String
    /// `idle`, `delivering`, `retrying` or `lost`.
    public let state: String
    /// Every event of the revisions up to here is delivered (or dead-lettered).
    public let deliveredRev: Int64
    /// The last revision of the log the trigger may read.
    public let headRev: Int64
    /// Revisions logged but not yet delivered.
    public let lagRevisions: Int64
    /// How old the oldest undelivered event is, in seconds.
    public let lagSeconds: Double
    /// Deliveries since the server started: answered with a 2xx, failed, and retried.
    public let delivered: Int
    public let failed: Int
    public let retried: Int
    /// Deliveries in flight now.
    public let inFlight: Int
    /// Events in its dead-letter list now.
    public let deadLetters: Int
    /// Revisions whose events were lost to the backlog bound.
    public let lostRevisions: Int64
    /// The last delivery error, if any.
    public let lastError: String?
    /// The object as the server sent it (what `hearth triggers … --json` prints).
    public let json: JSONValue

    init(wire: JSONValue) {
        func int(_ key: String) -> Int { wire[key]?.int64Value.map { Int(clamping: $0) } ?? 0 }
        name = wire["name"]?.stringValue ?? "?"
        path = wire["path"]?.stringValue ?? ""
        if case .array(let items)? = wire["on"] { kinds = items.compactMap(\.stringValue) } else { kinds = [] }
        url = wire["url"]?.stringValue ?? ""
        source = wire["source"]?.stringValue ?? ""
        state = wire["state"]?.stringValue ?? ""
        deliveredRev = wire["deliveredRev"]?.int64Value ?? 0
        headRev = wire["headRev"]?.int64Value ?? 0
        lagRevisions = wire["lagRevisions"]?.int64Value ?? 0
        lagSeconds = wire["lagSeconds"]?.doubleValue ?? 0
        delivered = int("delivered")
        failed = int("failed")
        retried = int("retried")
        inFlight = int("inFlight")
        deadLetters = int("deadLetters")
        lostRevisions = wire["lostRevisions"]?.int64Value ?? 0
        lastError = wire["lastError"]?.stringValue
        json = wire
    }
}

/// An event that kept failing past its trigger's `maxAgeSeconds`, as
/// `Database.deadLetters(_:limit:)` lists it.
public struct TriggerDeadLetter: Sendable, Equatable {
    /// The event's id (`Hearth-Event-Id`), which `replayTrigger(_:ids:)` names.
    public let id: String
    /// The revision of the write.
    public let rev: Int64
    /// The location that changed.
    public let path: String
    /// `create`, `update` or `delete`.
    public let kind: String
    /// When it was moved to the list, in milliseconds since 1970.
    public let deadAt: Int64
    /// How many times it was sent.
    public let attempts: Int
    /// Why its last attempt failed.
    public let lastError: String
    /// The object as the server sent it.
    public let json: JSONValue

    init(wire: JSONValue) {
        id = wire["id"]?.stringValue ?? ""
        rev = wire["rev"]?.int64Value ?? 0
        path = wire["path"]?.stringValue ?? ""
        kind = wire["kind"]?.stringValue ?? ""
        deadAt = wire["deadAt"]?.int64Value ?? 0
        attempts = wire["attempts"]?.int64Value.map { Int(clamping: $0) } ?? 0
        lastError = wire["lastError"]?.stringValue ?? ""
        json = wire
    }
}
