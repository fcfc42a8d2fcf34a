package import HearthCore
import HearthJSON

/// One message a Firebase client sent: a control message, or a request (`{"t":"d","d":{"r":N,
/// "a":ACTION,"b":BODY}}`) decoded into what Hearth does with it (docs/firebase-sdk.md,
/// "Requests"). Writes, reads and listens become the same `Operation`s the line protocol's
/// requests become, through the same decoder and its checks.
package enum FirebaseInbound {
    /// A control message (`{"t":"c","d":{"t":TYPE,…}}`): `p` ping and the transport-upgrade ones.
    case control(type: String)
    case request(number: Int64, FirebaseRequest)
    /// A request with a number that cannot be served: answered with the error.
    case refused(number: Int64, DatabaseError)

    /// Decodes one message; an error means it is not a message at all (no request number).
    package static func decode(_ bytes: [UInt8], decoder: RequestDecoder) throws(DatabaseError) -> FirebaseInbound {
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes, limits: decoder.jsonLimits)
        } catch {
            throw DatabaseError(.badRequest, "malformed JSON: \(error.message)")
        }
        guard case .string(let type)? = json["t"], let payload = json["d"] else {
            throw DatabaseError(.badRequest, #"a message must be {"t":"c"|"d","d":…}"#)
        }
        switch type {
        case "c":
            guard case .string(let control)? = payload["t"] else {
                throw DatabaseError(.badRequest, "a control message needs a type")
            }
            return .control(type: control)
        case "d":
            guard let number = payload["r"]?.int64Value else {
                throw DatabaseError(.badRequest, "a data message from a client must be a request with a number r")
            }
            guard case .string(let action)? = payload["a"] else {
                return .refused(number: number, DatabaseError(.badRequest, "the request has no action a"))
            }
            do {
                return .request(
                    number: number,
                    try FirebaseRequest(action: action, body: payload["b"] ?? .object([]), decoder: decoder))
            } catch {
                return .refused(number: number, error)
            }
        default:
            throw DatabaseError(.badRequest, "unknown message type \"\(type)\"")
        }
    }

    /// The request number at the start of a message too long to keep (the SDKs write `r` first,
    /// right after `{"t":"d","d":{`).
    package static func requestNumber(inPrefix prefix: [UInt8]) -> Int64? {
        let marker = Array(#""r":"#.utf8)
        guard prefix.count > marker.count,
            let start = (0...(prefix.count - marker.count)).first(where: {
                prefix[$0..<$0 + marker.count].elementsEqual(marker)
            })
        else { return nil }
        let digits = prefix[(start + marker.count)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !digits.isEmpty, digits.count < 16, start + marker.count + digits.count < prefix.count else { return nil }
        return digits.reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
    }
}

/// What a client's request asks for.
package enum FirebaseRequest {
    /// `s`: the client's counters (answered, not kept).
    case stats
    /// `q`: a listen, identified by its path and tag (`query` is the query object as sent, for a
    /// later revocation push).
    case listen(FirebaseListenKey, query: JSONValue?, Operation)
    /// `n`.
    case unlisten(FirebaseListenKey)
    /// `p`, `m` and `g`, and the onDisconnect ones: an engine operation; `path` for a `datastale`
    /// push.
    case operation(Operation, path: Path)
    /// `auth` / `gauth`.
    case auth(String)
    /// `unauth`.
    case unauth
    /// `appcheck` / `unappeck`: App Check is not part of Hearth; acknowledged and ignored.
    case appCheck

    init(action: String, body: JSONValue, decoder: RequestDecoder) throws(DatabaseError) {
        func path() throws(DatabaseError) -> JSONValue {
            guard case .string(let text)? = body["p"] else {
                throw DatabaseError(.invalidPath, "the request needs a path p")
            }
            return .string(text)
        }
        func operation(_ members: KeyValuePairs<String, JSONValue>) throws(DatabaseError) -> Operation {
            try decoder.operation(.object(members))
        }
        func parsedPath() throws(DatabaseError) -> Path {
            try Path.parse(path().stringValue ?? "", limits: decoder.limits)
        }
        let data = body["d"] ?? .null
        switch action {
        case "s":
            self = .stats
        case "q", "l":
            let key = FirebaseListenKey(path: try parsedPath(), tag: body["t"]?.int64Value)
            let query = try FirebaseQuery.lineQuery(body["q"])
            var hash = ""
            if case .string(let sent)? = body["h"] { hash = sent }
            let stream: Operation
            switch try operation(["op": .string("subscribe"), "path": path(), "query": query ?? .null]) {
            case .subscribe(let path, let spec, _, let ruleQuery, _):
                stream = .stream(
                    path: path, query: query == nil || key.tag == nil ? nil : spec, format: .export,
                    ruleQuery: ruleQuery, firebase: FirebaseListen(knownHash: hash))
            default:
                throw DatabaseError(.internal, "a listen did not decode as a subscription")
            }
            self = .listen(key, query: body["q"], stream)
        case "n", "u":
            self = .unlisten(FirebaseListenKey(path: try parsedPath(), tag: body["t"]?.int64Value))
        case "p":
            let target = try parsedPath()
            if case .string(let hash)? = body["h"] {
                self = .operation(
                    try operation([
                        "op": .string("transaction"), "path": path(), "value": data, "expectHash": .string(hash),
                    ]),
                    path: target)
            } else if data == .null {
                self = .operation(try operation(["op": .string("remove"), "path": path()]), path: target)
            } else {
                self = .operation(try operation(["op": .string("set"), "path": path(), "value": data]), path: target)
            }
        case "m":
            self = .operation(
                try operation(["op": .string("update"), "path": path(), "values": data]), path: try parsedPath())
        case "o":
            let action: JSONValue = .string(data == .null ? "remove" : "set")
            self = .operation(
                try operation(["op": .string("onDisconnect"), "action": action, "path": path(), "value": data]),
                path: try parsedPath())
        case "om":
            self = .operation(
                try operation([
                    "op": .string("onDisconnect"), "action": .string("update"), "path": path(), "values": data,
                ]),
                path: try parsedPath())
        case "oc":
            self = .operation(
                try operation(["op": .string("onDisconnect"), "action": .string("cancel"), "path": path()]),
                path: try parsedPath())
        case "g":
            let query = try FirebaseQuery.lineQuery(body["q"])
            var members: [JSONMember] = [
                JSONMember("op", .string("get")), JSONMember("path", try path()),
                JSONMember("format", .string("export")),
            ]
            if let query { members.append(JSONMember("query", query)) }
            self = .operation(try decoder.operation(.object(members)), path: try parsedPath())
        case "auth", "gauth":
            guard case .string(let token)? = body["cred"], !token.isEmpty else {
                throw DatabaseError(.badRequest, "auth needs a credential cred")
            }
            self = .auth(token)
        case "unauth":
            self = .unauth
        case "appcheck", "unappeck":
            self = .appCheck
        default:
            throw DatabaseError(.badRequest, "unknown action \"\(action)\"")
        }
    }
}

/// A listen as a client names it: its path and, for a query with a range or limit, its tag.
package struct FirebaseListenKey: Hashable, Sendable {
    package let path: Path
    package let tag: Int64?
}
