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
    package static func decode(
        _ bytes: [UInt8], decoder: RequestDecoder, workspace: inout JSONParseWorkspace, paths: PathMemo? = nil
    ) throws(DatabaseError) -> FirebaseInbound {
        let decoded = bytes.withUnsafeBytes { raw in
            Result { () throws(DatabaseError) -> FirebaseInbound in
                try decode(raw, decoder: decoder, workspace: &workspace, paths: paths)
            }
        }
        return try decoded.get()
    }

    /// Decodes one message from bytes valid only during the call.
    package static func decode(
        _ raw: UnsafeRawBufferPointer, decoder: RequestDecoder, workspace: inout JSONParseWorkspace,
        paths: PathMemo? = nil
    ) throws(DatabaseError) -> FirebaseInbound {
        if let write = write(in: raw, decoder: decoder, workspace: &workspace, paths: paths) { return write }
        let json: JSONValue
        do {
            json = try JSONParser.parse(raw, limits: decoder.jsonLimits, reusing: &workspace)
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
                    try FirebaseRequest(
                        action: action, body: payload["b"] ?? .object([]), decoder: decoder, paths: paths))
            } catch {
                return .refused(number: number, error)
            }
        default:
            throw DatabaseError(.badRequest, "unknown message type \"\(type)\"")
        }
    }

    /// The SDKs' puts and merges without a tree: a message that starts as they write one,
    /// `{"t":"d","d":{"r":N,"a":"p"` (or `"m"`) `,"b":{…}}}` with a body of `p` and `d` alone, has its
    /// body's members read straight into the request's fields. Nil for any other message (and for
    /// any doubt), which then takes the general path, errors included.
    static func write(
        in raw: UnsafeRawBufferPointer, decoder: RequestDecoder, workspace: inout JSONParseWorkspace, paths: PathMemo?
    ) -> FirebaseInbound? {
        let bytes = raw.bindMemory(to: UInt8.self)
        let head = #"{"t":"d","d":{"r":"#.utf8
        guard bytes.count > head.count + 16, bytes.starts(with: head), bytes[bytes.count - 1] == UInt8(ascii: "}"),
            bytes[bytes.count - 2] == UInt8(ascii: "}")
        else { return nil }
        var index = head.count
        var number: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9"),
            index - head.count < 15
        {
            number = number * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        let middle = #","a":"?","b":"#.utf8
        guard index > head.count, bytes.count - index > middle.count + 2 else { return nil }
        let action = bytes[index + 6]
        guard action == UInt8(ascii: "p") || action == UInt8(ascii: "m") else { return nil }
        for (offset, byte) in middle.enumerated() where offset != 6 {
            guard bytes[index + offset] == byte else { return nil }
        }
        let body = UnsafeRawBufferPointer(rebasing: raw[(index + middle.count)..<(raw.count - 2)])
        var fields = Fields(op: action == UInt8(ascii: "p") ? "set" : "update", paths: paths)
        var members = 0
        var plain = true
        do {
            let isObject = try JSONParser.parseMembers(of: body, limits: decoder.jsonLimits, reusing: &workspace) {
                name, value in
                members += 1
                if name.count == 1, name[0] == UInt8(ascii: "p") {
                    fields.set(.path, value)
                } else if name.count == 1, name[0] == UInt8(ascii: "d") {
                    // A put of null is a remove, which the general path spells.
                    if case .parsed(.null) = value { plain = false }
                    fields.set(action == UInt8(ascii: "p") ? .value : .values, value)
                } else {
                    plain = false
                }
            }
            guard isObject, plain, members == 2 else { return nil }
        } catch {
            return nil
        }
        do {
            return .request(number: number, .operation(try decoder.operation(fields)))
        } catch {
            return .refused(number: number, error)
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
    /// `p`, `m` and `g`, and the onDisconnect ones: an engine operation.
    case operation(Operation)
    /// `auth` / `gauth`.
    case auth(String)
    /// `unauth`.
    case unauth
    /// `appcheck` / `unappeck`: App Check is not part of Hearth; acknowledged and ignored.
    case appCheck

    /// `paths`: the connection's last path (`PathMemo`), so that a client writing one place
    /// over and over has its path parsed once.
    init(action: String, body: JSONValue, decoder: RequestDecoder, paths: PathMemo?) throws(DatabaseError) {
        guard case .string(let pathText)? = body["p"] else {
            switch action {
            case "s": self = .stats
            case "auth", "gauth": self = try Self.auth(body)
            case "unauth": self = .unauth
            case "appcheck", "unappeck": self = .appCheck
            default: throw Self.unknownOrPathless(action)
            }
            return
        }
        func operation(
            _ op: String, _ members: KeyValuePairs<RequestField, JSONValue> = [:]
        ) throws(DatabaseError) -> Operation {
            try decoder.operation(Fields(op: op, path: pathText, paths: paths, members))
        }
        let data = body["d"] ?? .null
        switch action {
        case "p":
            if case .string(let hash)? = body["h"] {
                self = .operation(try operation("transaction", [.value: data, .expectHash: .string(hash)]))
            } else if data == .null {
                self = .operation(try operation("remove"))
            } else {
                self = .operation(try operation("set", [.value: data]))
            }
        case "m":
            self = .operation(try operation("update", [.values: data]))
        case "q", "l":
            let query = try FirebaseQuery.lineQuery(body["q"])
            let tag = body["t"]?.int64Value
            var hash = ""
            if case .string(let sent)? = body["h"] { hash = sent }
            guard
                case .subscribe(let target, let spec, _, let ruleQuery, _) = try operation(
                    "subscribe", [.query: query ?? .null])
            else { throw DatabaseError(.internal, "a listen did not decode as a subscription") }
            // Only a query with a range or a limit is tagged; any other is the plain listen.
            let stream = Operation.stream(
                path: target, query: query == nil || tag == nil ? nil : spec, format: .export, ruleQuery: ruleQuery,
                firebase: FirebaseListen(knownHash: hash))
            self = .listen(FirebaseListenKey(path: target, tag: tag), query: body["q"], stream)
        case "n", "u":
            let target = try Path.parse(pathText, limits: decoder.limits)
            self = .unlisten(FirebaseListenKey(path: target, tag: body["t"]?.int64Value))
        case "o":
            let action: JSONValue = .string(data == .null ? "remove" : "set")
            self = .operation(try operation("onDisconnect", [.action: action, .value: data]))
        case "om":
            self = .operation(try operation("onDisconnect", [.action: .string("update"), .values: data]))
        case "oc":
            self = .operation(try operation("onDisconnect", [.action: .string("cancel")]))
        case "g":
            let query = try FirebaseQuery.lineQuery(body["q"])
            if let query {
                self = .operation(try operation("get", [.format: .string("export"), .query: query]))
            } else {
                self = .operation(try operation("get", [.format: .string("export")]))
            }
        default:
            throw Self.unknownOrPathless(action)
        }
    }

    private static func unknownOrPathless(_ action: String) -> DatabaseError {
        switch action {
        case "p", "m", "q", "l", "n", "u", "o", "om", "oc", "g":
            return DatabaseError(.invalidPath, "the request needs a path p")
        default:
            return DatabaseError(.badRequest, "unknown action \"\(action)\"")
        }
    }

    private static func auth(_ body: JSONValue) throws(DatabaseError) -> FirebaseRequest {
        guard case .string(let token)? = body["cred"], !token.isEmpty else {
            throw DatabaseError(.badRequest, "auth needs a credential cred")
        }
        return .auth(token)
    }
}

/// A listen as a client names it: its path and, for a query with a range or limit, its tag.
package struct FirebaseListenKey: Hashable, Sendable {
    package let path: Path
    package let tag: Int64?
}
