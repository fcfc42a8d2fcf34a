public import HearthCore
public import HearthJSON

/// Decodes request lines into validated `Request`s. Runs on the I/O threads: everything that
/// can be checked without the data is checked here, so the engine only applies.
public struct RequestDecoder: Sendable {
    public let limits: Limits
    /// Keep each request's JSON text in `Request.source` (a cluster node forwards writes).
    public var keepsSource = false

    public init(limits: Limits, keepsSource: Bool = false) {
        self.limits = limits
        self.keepsSource = keepsSource
    }

    /// A line that could not be turned into a request: the id (when it could be read) and why.
    public struct Failure: Error, Sendable {
        public let id: RequestID
        public let error: DatabaseError

        public init(id: RequestID, error: DatabaseError) {
            self.id = id
            self.error = error
        }
    }

    /// Parser limits: deep enough for any value the data limits allow inside a request envelope
    /// (values deeper than `maxDepth` are rejected with a precise message by the importer).
    public var jsonLimits: JSONLimits {
        var l = JSONLimits()
        l.maxDepth = limits.maxDepth * 2 + 16
        return l
    }

    /// Decodes one line (without its terminator).
    public func decode(_ line: UnsafeRawBufferPointer) -> Result<Request, Failure> {
        var workspace = JSONParseWorkspace()
        return decode(line, reusing: &workspace)
    }

    /// A decoded line: its request, or why it is not one.
    public typealias Decoded = Result<Request, Failure>

    /// Decodes one line (without its terminator), with the JSON parser's stacks kept in
    /// `workspace` between lines (one per connection), and the connection's last path in `paths`
    /// (when given).
    public func decode(
        _ line: UnsafeRawBufferPointer, reusing workspace: inout JSONParseWorkspace, paths: PathMemo? = nil
    ) -> Decoded {
        // The envelope is read member by member into `Fields`, without a JSON tree of its own.
        var fields = Fields()
        fields.paths = paths
        let isObject: Bool
        do {
            isObject = try JSONParser.parseMembers(of: line, limits: jsonLimits, reusing: &workspace) { name, value in
                fields.add(name, value)
            }
            if !isObject {
                // Not an object: parsing it whole says whether it is malformed or another value.
                _ = try JSONParser.parse(line, limits: jsonLimits, reusing: &workspace)
            }
        } catch {
            let code: DatabaseError.Code = error.kind == .tooDeep ? .tooDeep : .badRequest
            return .failure(Failure(id: .null, error: DatabaseError(code, "malformed JSON: \(error.message)")))
        }
        guard isObject else {
            return .failure(Failure(id: .null, error: DatabaseError(.badRequest, "a request must be a JSON object")))
        }
        return request(from: fields, source: keepsSource ? Self.copy(line) : nil)
    }

    /// The line's bytes, copied at once (`Array(_:)` of a raw buffer goes byte by byte).
    private static func copy(_ line: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: line.count) { buffer, count in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: line)
            count = line.count
        }
    }

    /// Decodes one request object (already parsed): its id, operation and write id. With
    /// `keepsSource` the request keeps the object, for a replica to forward it to its leader.
    public func request(from json: JSONValue) -> Result<Request, Failure> {
        request(from: Fields(json), source: keepsSource ? json.serialized : nil)
    }

    private func request(from fields: Fields, source: [UInt8]?) -> Result<Request, Failure> {
        var id: RequestID = .null
        switch fields[.id] {
        case nil, .null?: break
        case let value? where value.isNumber: id = value
        case .string(let s)?: id = .string(s)
        default:
            return .failure(
                Failure(id: .null, error: DatabaseError(.badRequest, "field \"id\" must be a number or a string")))
        }
        do {
            let operation = try operation(fields)
            let writeID = try Self.writeID(fields[.wid], of: operation)
            return .success(Request(id: id, operation: operation, writeID: writeID, source: source))
        } catch {
            return .failure(Failure(id: id, error: error))
        }
    }

    /// The `wid` of a request: nil when absent; a `bad_request` when it is not a write id or the
    /// operation is not a write.
    static func writeID(_ value: JSONValue?, of operation: Operation) throws(DatabaseError) -> WriteID? {
        guard let value else { return nil }
        switch operation {
        case .write, .push: break
        default:
            throw DatabaseError(
                .badRequest,
                "wid is only accepted on writes (set, update, remove, push, setPriority, transaction)")
        }
        guard case .string(let text) = value, let id = WriteID(text) else {
            throw DatabaseError(
                .badRequest,
                "field \"wid\" must be a string \"<client>:<n>\": client 1–64 characters of A–Z, a–z, 0–9, _ and -, "
                    + "n a decimal integer from 1 to 9007199254740991 without leading zeros")
        }
        return id
    }

    /// Decodes one request object (already parsed) into its operation, with every check of
    /// `decode`. The HTTP API builds such objects from its requests, so that both protocols
    /// produce the same operations through the same validation.
    public func operation(_ json: JSONValue) throws(DatabaseError) -> Operation {
        try operation(Fields(json))
    }

    func operation(_ fields: Fields) throws(DatabaseError) -> Operation {
        guard let op = fields[.op] else { throw DatabaseError(.badRequest, "missing field \"op\"") }
        guard case .string(let name) = op else { throw DatabaseError(.badRequest, "field \"op\" must be a string") }
        switch name {
        case "get":
            let path = try readPath(fields)
            var options = ReadOptions()
            if let query = fields[.query] {
                options.query = try QuerySpec(json: query, limits: limits)
                options.ruleQuery = RuleQuery(json: query)
            }
            options.shallow = try fields.bool(.shallow) ?? false
            options.hash = try fields.bool(.hash) ?? false
            switch try fields.string(.format) {
            case nil: break
            case "export": options.format = .export
            case let other?:
                throw DatabaseError(.badRequest, "field \"format\" must be \"export\" when present, not \"\(other)\"")
            }
            return .get(path: path, options: options)
        case "set":
            let path = try writePath(fields, allowPriority: true)
            var value = try fields.required(.value)
            if path.last == Key.priority { try Self.checkPriority(value) }
            if let priority = try fields.optionalPriority() {
                value = Self.attaching(priority: priority, to: value)
            }
            return .write(.set(path: path, value: try PreparedValue(value, at: path, limits: limits)), kind: .set)
        case "remove":
            let path = try writePath(fields, allowPriority: true)
            return .write(.set(path: path, value: PreparedValue(node: .empty)), kind: .remove)
        case "setPriority":
            let path = try writePath(fields)
            guard fields.has(.priority) else { throw DatabaseError(.badRequest, "missing field \"priority\"") }
            let priority = try fields.optionalPriority() ?? .null
            let target = path.appending(Key.priority)
            return .write(
                .set(path: target, value: try PreparedValue(priority, at: path, limits: limits)), kind: .setPriority)
        case "update":
            let path = try writePath(fields)
            let values = try relativeValues(fields, base: path)
            let prepared = try values.map { entry throws(DatabaseError) in
                (
                    path: entry.path,
                    value: try PreparedValue(entry.value, at: path.appending(entry.path), limits: limits)
                )
            }
            return .write(try Write.update(at: path, values: prepared), kind: .update)
        case "push":
            let path = try writePath(fields)
            let value = try fields.required(.value)
            // Prepared for the depth of the pushed child; its key is chosen by the engine.
            return .push(path: path, value: try PreparedValue(value, at: path.appending(Key("-")), limits: limits))
        case "transaction":
            let path = try writePath(fields)
            let value = try fields.required(.value)
            let prepared = try PreparedValue(value, at: path, limits: limits)
            let expectation: TransactionExpectation
            switch (fields.has(.expect), fields.has(.expectHash)) {
            case (true, false):
                let expected = try fields.required(.expect)
                let node = try PreparedValue(expected, at: path, limits: limits).node
                expectation = .value(node, comparePriorities: expected.containsPriority)
            case (false, true):
                guard let hash = try fields.string(.expectHash) else {
                    throw DatabaseError(.badRequest, "field \"expectHash\" must be a string")
                }
                expectation = .hash(hash)
            case (true, true):
                throw DatabaseError(.badRequest, "give either \"expect\" or \"expectHash\", not both")
            case (false, false):
                throw DatabaseError(.badRequest, "missing field \"expect\" or \"expectHash\"")
            }
            return .write(
                .transaction(
                    path: path, value: prepared, expectation: expectation, valueHasPriority: value[".priority"] != nil),
                kind: .transaction)
        case "onDisconnect":
            guard let action = try fields.string(.action) else {
                throw DatabaseError(.badRequest, "missing field \"action\"")
            }
            let path = try writePath(fields)
            switch action {
            case "set":
                let value = try fields.required(.value)
                _ = try PreparedValue(value, at: path, limits: limits)
                return .onDisconnect(.set(path, value))
            case "remove":
                return .onDisconnect(.set(path, .null))
            case "update":
                let values = try relativeValues(fields, base: path)
                for entry in values {
                    _ = try PreparedValue(entry.value, at: path.appending(entry.path), limits: limits)
                }
                return .onDisconnect(.update(path, values))
            case "cancel":
                return .onDisconnect(.cancel(path))
            default:
                throw DatabaseError(.badRequest, "field \"action\" must be one of set, update, remove, cancel")
            }
        case "ping":
            return .ping
        case "subscribe":
            let path = try readPath(fields)
            let wireQuery = fields[.query]
            let query = try wireQuery.map { q throws(DatabaseError) in try QuerySpec(json: q, limits: limits) }
            return .subscribe(
                path: path, query: query ?? .default, events: try eventMask(fields),
                ruleQuery: wireQuery.map { RuleQuery(json: $0) }, cache: try cacheMode(fields))
        case "unsubscribe":
            guard let sub = fields[.sub]?.int64Value, sub > 0 else {
                throw DatabaseError(.badRequest, "field \"sub\" must be a subscription id (a positive integer)")
            }
            return .unsubscribe(sub: Int(sub))
        case "auth":
            guard let token = try fields.string(.token), !token.isEmpty else {
                throw DatabaseError(
                    .badRequest, "field \"token\" must be a non-empty string (a JWT or an admin secret)")
            }
            return .auth(.token(token))
        case "unauth":
            return .auth(.signOut)
        case "setRules":
            return .setRules(try Self.ruleSet(fields.required(.rules)))
        case "getRules":
            return .getRules
        case "simulate":
            let identity = try Self.simulatedIdentity(fields[.identity] ?? .null)
            let inner = try fields.required(.request)
            guard case .object = inner else {
                throw DatabaseError(.badRequest, "field \"request\" must be a request object")
            }
            let operation = try operation(inner)
            switch operation {
            case .get, .subscribe, .write, .push, .onDisconnect: break
            default:
                throw DatabaseError(
                    .badRequest,
                    "simulate takes a read or write request (get, subscribe, set, update, remove, push, setPriority, transaction, onDisconnect)"
                )
            }
            return .simulate(identity: identity, operation: operation)
        case "use":
            return .database(.use(try databaseName(fields)))
        case "listDatabases":
            return .database(.list)
        case "createDatabase":
            return .database(.create(try databaseName(fields)))
        case "databaseInfo":
            return .database(.info(try databaseName(fields)))
        case "deleteDatabase":
            return .database(.delete(try databaseName(fields), purge: try fields.bool(.purge) ?? false))
        case "triggers":
            return .database(.triggers(.list))
        case "addTrigger":
            guard case .object = try fields.required(.trigger) else {
                throw DatabaseError(.badRequest, "field \"trigger\" must be a trigger object")
            }
            return .database(.triggers(.add(try fields.required(.trigger))))
        case "removeTrigger":
            return .database(.triggers(.remove(name: try triggerName(fields))))
        case "deadLetters":
            let limit: Int
            switch fields[.limit] {
            case nil: limit = TriggerRequest.defaultDeadLetterLimit
            case .int(let n)? where n >= 1 && n <= Int64(TriggerRequest.maxDeadLetterLimit): limit = Int(n)
            default:
                throw DatabaseError(
                    .badRequest,
                    "field \"limit\" must be a whole number in 1...\(TriggerRequest.maxDeadLetterLimit)")
            }
            return .database(.triggers(.deadLetters(name: try triggerName(fields), limit: limit)))
        case "replayTrigger":
            return .database(.triggers(.replay(name: try triggerName(fields), ids: try Self.eventIDs(fields[.ids]))))
        default:
            if let cluster = try clusterOperation(name, fields) { return cluster }
            throw DatabaseError(.unknownOp, "unknown op \"\(name)\"")
        }
    }

    /// The `db` of a database request.
    func databaseName(_ fields: Fields) throws(DatabaseError) -> String {
        guard let name = try fields.string(.db) else { throw DatabaseError(.badRequest, "missing field \"db\"") }
        return name
    }

    /// The `name` of a trigger request.
    func triggerName(_ fields: Fields) throws(DatabaseError) -> String {
        guard let name = try fields.string(.name), !name.isEmpty else {
            throw DatabaseError(.badRequest, "missing field \"name\" (the trigger's name)")
        }
        return name
    }

    /// The `ids` of a `replayTrigger`: nil (every dead letter) or a non-empty array of event ids.
    public static func eventIDs(_ value: JSONValue?) throws(DatabaseError) -> [String]? {
        guard let value, value != .null else { return nil }
        let bad = DatabaseError(.badRequest, "field \"ids\" must be a non-empty array of event ids (strings)")
        guard case .array(let items) = value, !items.isEmpty else { throw bad }
        var ids: [String] = []
        for item in items {
            guard case .string(let id) = item else { throw bad }
            ids.append(id)
        }
        return ids
    }

    /// Compiles the `rules` of a `setRules`: the whole rules document as the file holds it, as
    /// an object or as its text (which may contain comments).
    static func ruleSet(_ value: JSONValue) throws(DatabaseError) -> RuleSet {
        do throws(RulesError) {
            switch value {
            case .string(let text): return try RuleSet(source: text)
            case .object: return try RuleSet(document: value)
            default: break
            }
        } catch {
            throw DatabaseError(.invalidRules, error.description)
        }
        throw DatabaseError(.badRequest, "field \"rules\" must be a rules document ({\"rules\":{…}}) or its text")
    }

    /// The identity of a `simulate`: null (unauthenticated), `"admin"`, or
    /// `{"uid": …, "token": {claims}, "provider": …}` as a verified token would give it.
    public static func simulatedIdentity(_ value: JSONValue) throws(DatabaseError) -> AuthContext? {
        switch value {
        case .null: return nil
        case .string("admin"): return .admin
        case .object:
            guard case .string(let uid)? = value["uid"], !uid.isEmpty else {
                throw DatabaseError(.badRequest, "field \"as\" needs a non-empty \"uid\"")
            }
            var claims: [JSONMember] = []
            if let token = value["token"] {
                guard case .object(let members) = token else {
                    throw DatabaseError(.badRequest, "field \"as.token\" must be an object of claims")
                }
                claims = members.filter { $0.key != "sub" }
            }
            claims.insert(JSONMember("sub", .string(uid)), at: 0)
            let provider: String
            switch value["provider"] ?? JSONValue.object(claims)["provider"] {
            case .string(let p)?: provider = p
            default: provider = "custom"
            }
            return AuthContext(uid: uid, provider: provider, claims: .object(claims), expiresAt: nil)
        default:
            throw DatabaseError(.badRequest, "field \"as\" must be null, \"admin\" or {\"uid\":…,\"token\":{…}}")
        }
    }

    /// The `events` of a subscribe: a non-empty subset of the five event types; default value.
    func eventMask(_ fields: Fields) throws(DatabaseError) -> EventMask {
        guard let events = fields[.events] else { return .value }
        guard case .array(let names) = events, !names.isEmpty else {
            throw DatabaseError(.badRequest, "field \"events\" must be a non-empty array of event types")
        }
        var mask: EventMask = []
        for name in names {
            guard case .string(let text) = name, let type = EventType(rawValue: text) else {
                throw DatabaseError(
                    .badRequest,
                    "unknown event type \(name.jsonString); use value, child_added, child_changed, child_removed or child_moved"
                )
            }
            mask.insert(EventMask(type))
        }
        return mask
    }

    /// `cache` and `since` of a subscribe: nil unless `"cache":true`; `since` only with it.
    func cacheMode(_ fields: Fields) throws(DatabaseError) -> CacheMode? {
        let cache = try fields.bool(.cache) ?? false
        guard let since = fields[.since] else { return cache ? CacheMode() : nil }
        guard cache else {
            throw DatabaseError(.badRequest, "field \"since\" needs \"cache\":true (resuming is for cache mode)")
        }
        guard case .int(let rev) = since, rev >= 0 else {
            throw DatabaseError(.badRequest, "field \"since\" must be a revision (a non-negative integer)")
        }
        return CacheMode(since: UInt64(rev))
    }

    func readPath(_ fields: Fields) throws(DatabaseError) -> Path {
        try path(fields)
    }

    func writePath(_ fields: Fields, allowPriority: Bool = false) throws(DatabaseError) -> Path {
        let path = try path(fields, allowPriority: allowPriority)
        if path.isInfo { throw DatabaseError(.invalidPath, "can't modify data under /.info") }
        return path
    }

    /// The request's path: the connection's last path when its text is that path's
    /// (`Fields.knownPath`; `PathMemo` never holds a `.priority` path), else `Path.parse` of it,
    /// which the connection then remembers.
    private func path(_ fields: Fields, allowPriority: Bool = false) throws(DatabaseError) -> Path {
        if let known = fields.knownPath { return known }
        guard let string = try fields.string(.path) else { throw DatabaseError(.badRequest, "missing field \"path\"") }
        let path = try Path.parse(string, limits: limits, allowInfo: true, allowPriority: allowPriority)
        fields.paths?.remember(string, path)
        return path
    }

    /// The `values` object of an update: relative path → value, in document order.
    func relativeValues(_ fields: Fields, base: Path) throws(DatabaseError) -> [(path: Path, value: JSONValue)] {
        guard let values = fields[.values] else { throw DatabaseError(.badRequest, "missing field \"values\"") }
        guard case .object(let members) = values else {
            throw DatabaseError(.badRequest, "field \"values\" must be an object of relative paths to values")
        }
        var result: [(path: Path, value: JSONValue)] = []
        result.reserveCapacity(members.count)
        for member in members {
            let relative = try Path.parse(member.key, limits: limits, allowPriority: true)
            if relative.last == Key.priority { try Self.checkPriority(member.value) }
            if base.count + relative.count > limits.maxDepth + (relative.last == Key.priority ? 1 : 0) {
                throw DatabaseError(
                    .tooDeep, "path \(base.appending(relative)) exceeds the maximum depth of \(limits.maxDepth)")
            }
            result.append((relative, member.value))
        }
        return result
    }

    /// A value written to a `.priority` path must be a valid priority.
    static func checkPriority(_ value: JSONValue) throws(DatabaseError) {
        switch value {
        case .null, .int, .double, .string: return
        case .object(let m) where m.count == 1 && m[0].key == ".sv": return
        default: throw DatabaseError(.invalidValue, "priority must be a string, a number or null")
        }
    }

    /// `value` with a `.priority` member (or `{".value": v, ".priority": p}` for a leaf).
    static func attaching(priority: JSONValue, to value: JSONValue) -> JSONValue {
        switch value {
        case .object(var members):
            if members.count == 1, members[0].key == ".sv" {
                return .object([JSONMember(".value", value), JSONMember(".priority", priority)])
            }
            members.removeAll { $0.key == ".priority" }
            members.append(JSONMember(".priority", priority))
            return .object(members)
        case .null:
            return .null
        default:
            return .object([JSONMember(".value", value), JSONMember(".priority", priority)])
        }
    }
}

extension JSONValue {
    /// Whether a `.priority` member appears anywhere in this value.
    var containsPriority: Bool {
        switch self {
        case .object(let members):
            return members.contains { $0.key == ".priority" || $0.value.containsPriority }
        case .array(let elements):
            return elements.contains { $0.containsPriority }
        default:
            return false
        }
    }
}
