public import HearthCore
public import HearthJSON

/// The result of one request, encoded into its response line on the connection's I/O thread.
public enum ResponseBody: Sendable {
    /// A write committed as `rev`.
    case committed(rev: UInt64)
    /// A push committed as `rev` under `key`.
    case pushed(key: String, rev: UInt64)
    /// A write (or push, then with its `key`) committed as `rev`, with the node now stored at
    /// the path it named (for a push, the new child); answers a request that asked for it
    /// (`Request.answerWithStoredValue`).
    case stored(Node, key: String?, rev: UInt64)
    /// A read: the node (rendered per `options`) at revision `rev`.
    case value(Node, rev: UInt64, options: ReadOptions)
    /// A read with a query: the selected children in query order (or the location itself for a
    /// leaf under an unfiltered query), plus an index warning when there is one.
    case window(QueryResult, rev: UInt64, options: ReadOptions, warning: String?)
    /// A subscription was created. In cache mode `initial` is the number of event lines that
    /// follow as its initial state, and `resumed` says they are the changes since the revision
    /// the client named (`since`) rather than the whole result.
    case subscribed(sub: Int, rev: UInt64, warning: String?, initial: Int? = nil, resumed: Bool = false)
    /// A transaction that committed as `rev`.
    case transactionCommitted(rev: UInt64)
    /// A write whose write id the server remembers: it was not applied again; this is its first
    /// success answer (`committed`, `pushed` or `transactionCommitted`), sent with
    /// `"duplicate":true`.
    indirect case duplicate(ResponseBody)
    /// A transaction that did not commit: the current node (export format) and its hash.
    case stale(current: Node)
    /// A request that succeeds with no fields.
    case done
    /// The server time, for `ping`.
    case pong(serverTime: Int64)
    /// A failed request.
    case failure(DatabaseError)
    /// `auth`/`unauth` succeeded: the identity now in force (nil: unauthenticated).
    case authenticated(AuthContext?, warning: String?)
    /// `getRules`: the rules document in force (null in open mode).
    case rules(JSONValue)
    /// `setRules` took effect (with the server's warning, if any).
    case rulesReplaced(warning: String?)
    /// `simulate`: what the rules decide for the simulated request.
    case simulated(RuleVerdict)
    /// A response given by its members (after `id`), written as they are: the leader's answer to
    /// a forwarded request, relayed with the client's id, and the cluster ops' answers.
    case members([JSONMember])
}

/// Encodes responses and server-initiated lines.
public enum ResponseEncoder {
    /// Appends `{"id":…,"ok":…}` and a newline to `buffer`.
    public static func encode(id: RequestID, _ body: ResponseBody, into buffer: inout [UInt8]) {
        JSONWriter.writeLiteral(#"{"id":"#, into: &buffer)
        id.serialize(into: &buffer)
        writeMembers(body, into: &buffer)
        JSONWriter.writeLiteral("}\n", into: &buffer)
    }

    /// The members of a response after its `id`.
    private static func writeMembers(_ body: ResponseBody, into buffer: inout [UInt8]) {
        switch body {
        case .committed(let rev), .stored(_, nil, let rev):
            JSONWriter.writeLiteral(#","ok":true,"rev":"#, into: &buffer)
            JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        case .stored(_, let key?, let rev), .pushed(let key, let rev):
            JSONWriter.writeLiteral(#","ok":true,"key":"#, into: &buffer)
            JSONWriter.writeString(key, into: &buffer)
            JSONWriter.writeLiteral(#","rev":"#, into: &buffer)
            JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        case .value(let node, let rev, let options):
            JSONWriter.writeLiteral(#","ok":true,"value":"#, into: &buffer)
            if options.shallow {
                node.shallowJSONValue().serialize(into: &buffer)
            } else {
                node.writeJSON(into: &buffer, format: options.format)
            }
            JSONWriter.writeLiteral(#","rev":"#, into: &buffer)
            JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
            if options.hash {
                JSONWriter.writeLiteral(#","hash":"#, into: &buffer)
                JSONWriter.writeString(node.hash, into: &buffer)
            }
        case .window(let result, let rev, let options, let warning):
            JSONWriter.writeLiteral(#","ok":true,"value":"#, into: &buffer)
            result.writeJSON(into: &buffer, format: options.format, shallow: options.shallow)
            JSONWriter.writeLiteral(#","rev":"#, into: &buffer)
            JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
            if options.hash {
                JSONWriter.writeLiteral(#","hash":"#, into: &buffer)
                JSONWriter.writeString(result.node.hash, into: &buffer)
            }
            writeWarning(warning, into: &buffer)
        case .subscribed(let sub, let rev, let warning, let initial, let resumed):
            JSONWriter.writeLiteral(#","ok":true,"sub":"#, into: &buffer)
            JSONWriter.writeInt(Int64(sub), into: &buffer)
            JSONWriter.writeLiteral(#","rev":"#, into: &buffer)
            JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
            if let initial {
                JSONWriter.writeLiteral(#","initial":"#, into: &buffer)
                JSONWriter.writeInt(Int64(initial), into: &buffer)
            }
            if resumed { JSONWriter.writeLiteral(#","resumed":true"#, into: &buffer) }
            writeWarning(warning, into: &buffer)
        case .duplicate(let original):
            writeMembers(original, into: &buffer)
            JSONWriter.writeLiteral(#","duplicate":true"#, into: &buffer)
        case .transactionCommitted(let rev):
            JSONWriter.writeLiteral(#","ok":true,"committed":true,"rev":"#, into: &buffer)
            JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        case .stale(let current):
            JSONWriter.writeLiteral(#","ok":true,"committed":false,"value":"#, into: &buffer)
            current.writeJSON(into: &buffer, format: .export)
            JSONWriter.writeLiteral(#","hash":"#, into: &buffer)
            JSONWriter.writeString(current.hash, into: &buffer)
        case .done:
            JSONWriter.writeLiteral(#","ok":true"#, into: &buffer)
        case .pong(let serverTime):
            JSONWriter.writeLiteral(#","ok":true,"serverTime":"#, into: &buffer)
            JSONWriter.writeInt(serverTime, into: &buffer)
        case .failure(let error):
            JSONWriter.writeLiteral(#","ok":false,"error":"#, into: &buffer)
            writeError(error, into: &buffer)
        case .authenticated(let identity, let warning):
            JSONWriter.writeLiteral(#","ok":true,"auth":"#, into: &buffer)
            if let identity {
                identity.wireJSON.serialize(into: &buffer)
            } else {
                JSONWriter.writeLiteral("null", into: &buffer)
            }
            writeWarning(warning, into: &buffer)
        case .rules(let document):
            JSONWriter.writeLiteral(#","ok":true,"rules":"#, into: &buffer)
            document.serialize(into: &buffer)
        case .rulesReplaced(let warning):
            JSONWriter.writeLiteral(#","ok":true"#, into: &buffer)
            writeWarning(warning, into: &buffer)
        case .simulated(let verdict):
            JSONWriter.writeLiteral(#","ok":true,"allowed":"#, into: &buffer)
            JSONWriter.writeBool(verdict.allowed, into: &buffer)
            JSONWriter.writeLiteral(#","rule":"#, into: &buffer)
            if let rule = verdict.decidingRule {
                JSONValue.object(["path": .string(rule.path), "expression": .string(rule.expression)])
                    .serialize(into: &buffer)
            } else {
                JSONWriter.writeLiteral("null", into: &buffer)
            }
            JSONWriter.writeLiteral(#","explanation":"#, into: &buffer)
            JSONWriter.writeString(verdict.explanation, into: &buffer)
        case .members(let members):
            for member in members {
                buffer.append(UInt8(ascii: ","))
                JSONWriter.writeString(member.key, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                member.value.serialize(into: &buffer)
            }
        }
    }

    static func writeWarning(_ warning: String?, into buffer: inout [UInt8]) {
        guard let warning else { return }
        JSONWriter.writeLiteral(#","warning":"#, into: &buffer)
        JSONWriter.writeString(warning, into: &buffer)
    }

    /// `{"code":"…","message":"…"}`
    public static func writeError(_ error: DatabaseError, into buffer: inout [UInt8]) {
        JSONWriter.writeLiteral(#"{"code":"#, into: &buffer)
        JSONWriter.writeString(error.code.rawValue, into: &buffer)
        JSONWriter.writeLiteral(#","message":"#, into: &buffer)
        JSONWriter.writeString(error.message, into: &buffer)
        if let retryAfterMs = error.retryAfterMs {
            JSONWriter.writeLiteral(#","retryAfterMs":"#, into: &buffer)
            JSONWriter.writeInt(Int64(retryAfterMs), into: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// The line sent on connect (with a `warning` when the server runs open on a reachable address).
    /// A cluster node adds `cluster`, its view of the cluster (docs/PROTOCOL.md "Cluster").
    public static func hello(
        server: String, serverTime: Int64, connection: String, warning: String? = nil, cluster: JSONValue? = nil
    ) -> [UInt8] {
        var buffer: [UInt8] = []
        JSONWriter.writeLiteral(#"{"event":"hello","protocol":1,"server":"#, into: &buffer)
        JSONWriter.writeString(server, into: &buffer)
        JSONWriter.writeLiteral(#","serverTime":"#, into: &buffer)
        JSONWriter.writeInt(serverTime, into: &buffer)
        JSONWriter.writeLiteral(#","connection":"#, into: &buffer)
        JSONWriter.writeString(connection, into: &buffer)
        writeWarning(warning, into: &buffer)
        if let cluster {
            JSONWriter.writeLiteral(#","cluster":"#, into: &buffer)
            cluster.serialize(into: &buffer)
        }
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }

    /// `{"event":"cluster","cluster":{…}}`: the node's role, leader or epoch changed.
    public static func clusterEvent(_ cluster: JSONValue) -> [UInt8] {
        var buffer: [UInt8] = Array(#"{"event":"cluster","cluster":"#.utf8)
        cluster.serialize(into: &buffer)
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }

    /// The line sent before a shutting-down server closes a connection.
    public static let goaway: [UInt8] = Array("{\"event\":\"goaway\"}\n".utf8)

    /// `{"sub":S,"event":"cancel","error":{…}}`: the server ended a subscription.
    public static func cancelEvent(sub: Int, _ error: DatabaseError) -> [UInt8] {
        var buffer: [UInt8] = Array(#"{"sub":"#.utf8)
        JSONWriter.writeInt(Int64(sub), into: &buffer)
        JSONWriter.writeLiteral(#","event":"cancel","error":"#, into: &buffer)
        writeError(error, into: &buffer)
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }

    /// `{"event":"auth_revoked","reason":…}`: the identity ended (e.g. its token expired).
    public static func authRevoked(reason: String) -> [UInt8] {
        var buffer: [UInt8] = Array(#"{"event":"auth_revoked","reason":"#.utf8)
        JSONWriter.writeString(reason, into: &buffer)
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }

    /// A connection-level error event (e.g. `slow_consumer`), sent before closing.
    public static func errorEvent(_ error: DatabaseError) -> [UInt8] {
        var buffer: [UInt8] = Array(#"{"event":"error","error":"#.utf8)
        writeError(error, into: &buffer)
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }
}

/// The value of a query read: selected children in query order (with the location's priority
/// for an unfiltered query), or a whole node (a leaf location).
public enum QueryResult: Sendable {
    case children([(key: Key, node: Node)], priority: Priority?)
    case node(Node)

    /// The result as one node (for its hash).
    public var node: Node {
        switch self {
        case .node(let node): return node
        case .children(let entries, let priority):
            var map = ChildMap()
            for entry in entries { map.insert(entry.key, entry.node) }
            return Node.object(map, priority: priority)
        }
    }

    /// Writes the children as one object in query order (`null` when there are none);
    /// `shallow` renders each child as `true`.
    public func writeJSON(into buffer: inout [UInt8], format: Node.Format, shallow: Bool = false) {
        switch self {
        case .node(let node):
            if shallow {
                node.shallowJSONValue().serialize(into: &buffer)
            } else {
                node.writeJSON(into: &buffer, format: format)
            }
        case .children(let entries, let priority):
            guard !entries.isEmpty else {
                JSONWriter.writeLiteral("null", into: &buffer)
                return
            }
            buffer.append(UInt8(ascii: "{"))
            for (i, entry) in entries.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                JSONWriter.writeString(entry.key.string, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                if shallow {
                    JSONWriter.writeLiteral("true", into: &buffer)
                } else {
                    entry.node.writeJSON(into: &buffer, format: format)
                }
            }
            if format == .export, !shallow, let priority {
                JSONWriter.writeLiteral(#",".priority":"#, into: &buffer)
                priority.writeJSON(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }
}

extension AuthContext {
    /// The identity as the `auth` response shows it: `{"admin":true}`, or
    /// `{"uid","provider","token":{claims},"expires":ms}`.
    public var wireJSON: JSONValue {
        if isAdmin { return .object(["admin": .bool(true)]) }
        var members = [
            JSONMember("uid", .string(uid)), JSONMember("provider", .string(provider)), JSONMember("token", claims),
        ]
        if let expiresAt { members.append(JSONMember("expires", .int(expiresAt))) }
        return .object(members)
    }
}
