import Crypto
public import HearthCore
public import HearthJSON
import NIOHTTP1

/// Who made a write, as a delivery names it.
public enum TriggerAuth: Sendable, Equatable {
    /// A user: the token's `uid` and its claims.
    case user(uid: String, token: JSONValue)
    /// An admin credential.
    case admin
    /// Nobody known (an open server, or a write logged without its author).
    case none

    var jsonValue: JSONValue {
        switch self {
        case .user(let uid, let token): .object(["uid": .string(uid), "token": token])
        case .admin: .object(["admin": .bool(true)])
        case .none: .null
        }
    }
}

/// One delivery of one trigger for one changed location: the body POSTed to the trigger's URL,
/// `{"id", "trigger", "db", "path", "params", "kind", "before", "after", "rev", "timestamp",
/// "auth"}`, with values in export form (priorities kept).
public struct TriggerEvent: Sendable, Equatable {
    public let database: String
    public let trigger: String
    public let change: TriggerChange
    /// The revision of the write.
    public let revision: Int64
    /// The server's time of the write, in milliseconds since 1970.
    public let timestamp: Int64
    public let auth: TriggerAuth

    public init(
        database: String, trigger: String, change: TriggerChange, revision: Int64, timestamp: Int64,
        auth: TriggerAuth
    ) {
        self.database = database
        self.trigger = trigger
        self.change = change
        self.revision = revision
        self.timestamp = timestamp
        self.auth = auth
    }

    /// The same for every retry of the event: database, trigger, revision and location.
    public var id: String { "\(database):\(trigger):\(revision):\(change.path)" }

    /// The JSON body, members in the order above.
    public func body() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        func member(_ name: StaticString, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(String(describing: name), into: &out)
            out.append(UInt8(ascii: ":"))
        }
        out.append(UInt8(ascii: "{"))
        member("id", first: true)
        JSONWriter.writeString(id, into: &out)
        member("trigger")
        JSONWriter.writeString(trigger, into: &out)
        member("db")
        JSONWriter.writeString(database, into: &out)
        member("path")
        JSONWriter.writeString(change.path.description, into: &out)
        member("params")
        JSONValue.object(change.params.map { JSONMember($0.name, .string($0.value)) }).serialize(into: &out)
        member("kind")
        JSONWriter.writeString(change.kind.rawValue, into: &out)
        member("before")
        change.before.writeJSON(into: &out, format: .export)
        member("after")
        change.after.writeJSON(into: &out, format: .export)
        member("rev")
        JSONWriter.writeInt(revision, into: &out)
        member("timestamp")
        JSONWriter.writeInt(timestamp, into: &out)
        member("auth")
        auth.jsonValue.serialize(into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// The `Hearth-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed
/// by the trigger's secret. A receiver recomputes the HMAC over the timestamp it was given and
/// the raw body, compares in constant time, and refuses timestamps older than its tolerance.
public enum TriggerSignature {
    public static let headerName = "Hearth-Signature"
    public static let eventIdHeaderName = "Hearth-Event-Id"

    /// The header's value for `body` signed at `time` (seconds since 1970).
    public static func header(body: [UInt8], secret: [UInt8], time: Int64) -> String {
        "t=\(time),v1=\(hex(mac(body: body, secret: secret, time: time)))"
    }

    private static func mac(body: [UInt8], secret: [UInt8], time: Int64) -> [UInt8] {
        var signed = Array("\(time).".utf8)
        signed.append(contentsOf: body)
        return hmac(signed, secret: secret)
    }

    /// HMAC-SHA256 of `message` keyed by `secret`.
    static func hmac(_ message: [UInt8], secret: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension TriggerSettings {
    /// The locations a write changed that this trigger delivers: its pattern's changes of the
    /// kinds in `on`.
    public func changes(at changedPaths: [Path], before: Node, after: Node) -> [TriggerChange] {
        pattern.changes(at: changedPaths, before: before, after: after).filter { kinds.contains($0.kind) }
    }

    /// The POST of `event` to `url` (this trigger's, parsed once), signed at `time` (seconds
    /// since 1970): `Content-Type`, `Hearth-Event-Id`, `Hearth-Signature`, then the configured
    /// headers.
    func request(for event: TriggerEvent, url: HTTPURL, time: Int64) -> HTTPRequester.Request {
        request(body: event.body(), id: event.id, url: url, time: time)
    }

    /// The POST of an event's `body` (made once, the same for every attempt) with id `id`,
    /// signed at `time`.
    func request(body: [UInt8], id: String, url: HTTPURL, time: Int64) -> HTTPRequester.Request {
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"),
            (TriggerSignature.eventIdHeaderName, id),
            (TriggerSignature.headerName, TriggerSignature.header(body: body, secret: secret.bytes, time: time)),
        ]
        for header in self.headers { headers.append((header.name, header.value)) }
        return HTTPRequester.Request(method: .POST, url: url, headers: headers, body: body)
    }
}
