public import HearthJSON

/// The kind of change a trigger event reports.
public enum TriggerKind: String, Sendable, Equatable, CaseIterable {
    /// Nothing was at the path before; something is after.
    case create
    /// Something was at the path before and after, and it changed.
    case update
    /// Something was at the path before; nothing is after.
    case delete
}

/// Who made the write that caused an event.
public enum TriggerAuth: Sendable, Equatable {
    /// An unauthenticated client (`"auth": null`).
    case unauthenticated
    /// An admin credential (`"auth": {"admin": true}`).
    case admin
    /// A user: `uid` and the token's claims as the server saw them (`"auth": {"uid", "token"}`).
    case user(uid: String, token: JSONValue)
}

/// Why a delivery's body is not a trigger event.
public struct TriggerEventError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// One trigger delivery, decoded from its JSON body:
/// `{"id", "trigger", "db", "path", "params", "kind", "before", "after", "rev", "timestamp", "auth"}`.
///
/// Values (`before`, `after`, the token's claims) are kept as `JSONValue`s, exactly as sent.
/// Members the body has beyond these are kept in `json` and otherwise ignored.
public struct TriggerEvent: Sendable, Equatable {
    /// The event's id: the same on every retry of this event (the `Hearth-Event-Id` header).
    public var id: String
    /// The name of the trigger that matched.
    public var trigger: String
    /// The database the write went to (nil when the body says `null` or leaves it out).
    public var db: String?
    /// The location that changed, e.g. `/messages/m1`.
    public var path: String
    /// Wildcard values: those the server matched with the trigger's pattern, overlaid with those
    /// the handler's own pattern matched when the event reaches a handler.
    public var params: [String: String]
    /// Create, update or delete.
    public var kind: TriggerKind
    /// The value at `path` before the write (`.null` when there was none).
    public var before: JSONValue
    /// The value at `path` after the write (`.null` when there is none).
    public var after: JSONValue
    /// The revision of the write.
    public var rev: Int64
    /// The server's time of the write, as the body gives it (milliseconds since the epoch).
    public var timestamp: Int64
    /// Who wrote.
    public var auth: TriggerAuth
    /// The whole body, as parsed.
    public var json: JSONValue

    /// Decodes the body of a delivery.
    public init(body: [UInt8], limits: JSONLimits = .default) throws(TriggerEventError) {
        let json: JSONValue
        do {
            json = try JSONParser.parse(body, limits: limits)
        } catch {
            throw TriggerEventError("body is not JSON: \(error.message)")
        }
        try self.init(json: json)
    }

    /// Decodes a parsed body.
    public init(json: JSONValue) throws(TriggerEventError) {
        guard case .object = json else { throw TriggerEventError("body is not an object") }
        guard let id = json["id"]?.stringValue, !id.isEmpty else { throw TriggerEventError("no id") }
        guard let trigger = json["trigger"]?.stringValue else { throw TriggerEventError("no trigger") }
        guard let path = json["path"]?.stringValue else { throw TriggerEventError("no path") }
        guard let kindText = json["kind"]?.stringValue, let kind = TriggerKind(rawValue: kindText) else {
            throw TriggerEventError("kind is not create, update or delete")
        }
        guard let rev = json["rev"]?.int64Value else { throw TriggerEventError("no rev") }
        guard let timestamp = json["timestamp"]?.int64Value else { throw TriggerEventError("no timestamp") }
        switch json["db"] {
        case nil, .null?: self.db = nil
        case .string(let name)?: self.db = name
        default: throw TriggerEventError("db is not a string")
        }
        var params: [String: String] = [:]
        switch json["params"] {
        case nil, .null?: break
        case .object(let members)?:
            for member in members {
                guard let value = member.value.stringValue else {
                    throw TriggerEventError("params.\(member.key) is not a string")
                }
                params[member.key] = value
            }
        default: throw TriggerEventError("params is not an object")
        }
        self.id = id
        self.trigger = trigger
        self.path = path
        self.params = params
        self.kind = kind
        self.before = json["before"] ?? .null
        self.after = json["after"] ?? .null
        self.rev = rev
        self.timestamp = timestamp
        self.auth = try Self.auth(json["auth"])
        self.json = json
    }

    private static func auth(_ value: JSONValue?) throws(TriggerEventError) -> TriggerAuth {
        switch value {
        case nil, .null?:
            return .unauthenticated
        case .object?:
            if value?["admin"]?.boolValue == true { return .admin }
            guard let uid = value?["uid"]?.stringValue else { throw TriggerEventError("auth has no uid") }
            return .user(uid: uid, token: value?["token"] ?? .null)
        default:
            throw TriggerEventError("auth is not an object or null")
        }
    }
}
