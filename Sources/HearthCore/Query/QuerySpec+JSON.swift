public import HearthJSON

extension QuerySpec {
    /// The members a wire query may have (docs/PROTOCOL.md, "Queries").
    static let wireFields = [
        "orderBy", "startAt", "startAtKey", "startAfter", "startAfterKey", "endAt", "endAtKey", "endBefore",
        "endBeforeKey", "equalTo", "equalToKey", "limitToFirst", "limitToLast",
    ]

    /// Parses the wire query object of docs/PROTOCOL.md ("Queries"):
    /// `{"orderBy": "$key"|"$value"|"$priority"|"<child/path>", "startAt": V, "startAtKey": K,
    /// "startAfter": V, "startAfterKey": K, "endAt": V, "endAtKey": K, "endBefore": V,
    /// "endBeforeKey": K, "equalTo": V, "equalToKey": K, "limitToFirst": N, "limitToLast": N}`.
    ///
    /// JSON `null` (no query) is the default query. Every invalid combination of docs/PROTOCOL.md ("Queries")
    /// throws `invalid_query` with a message naming the rule; a member given twice counts as two
    /// calls of the same method and is rejected the same way.
    /// Bounds follow docs/PROTOCOL.md ("Queries"): `startAt(v[, k])` = (v, k or MIN_NAME, inclusive),
    /// `startAfter(v[, k])` = (v, k or MAX_NAME, exclusive), `endAt(v[, k])` = (v, k or MAX_NAME, inclusive),
    /// `endBefore(v[, k])` = (v, k or MIN_NAME, exclusive), `equalTo` = `startAt` + `endAt`. Under
    /// key order the bound is the key given as the (string) value.
    public init(json: JSONValue, limits: Limits) throws(DatabaseError) {
        self.init()
        let members: [JSONMember]
        switch json {
        case .null: return
        case .object(let m): members = m
        default: throw Self.invalid("a query must be a JSON object, not \(Self.describe(json))")
        }
        var fields: [String: JSONValue] = [:]
        for member in members {
            guard Self.wireFields.contains(where: { $0.utf8Equals(member.key) }) else {
                throw Self.invalid(
                    "unknown query field \(quoted(member.key)); the fields are "
                        + Self.wireFields.joined(separator: ", "))
            }
            guard fields[member.key] == nil else {
                throw Self.invalid(Self.repeatedMessage(member.key))
            }
            fields[member.key] = member.value
        }

        if let orderBy = fields["orderBy"] { order = try Self.parseOrder(orderBy, limits: limits) }

        // One starting point, one ending point, one limit (docs/PROTOCOL.md, "Queries").
        let startNames = ["startAt", "startAfter", "equalTo"].filter { fields[$0] != nil }
        if startNames.count > 1 {
            throw Self.invalid(
                "\(startNames[0]) and \(startNames[1]) can't be combined: a query has one starting point (startAt, startAfter or equalTo)"
            )
        }
        let endNames = ["endAt", "endBefore", "equalTo"].filter { fields[$0] != nil }
        if endNames.count > 1 {
            throw Self.invalid(
                "\(endNames[0]) and \(endNames[1]) can't be combined: a query has one ending point (endAt, endBefore or equalTo)"
            )
        }
        for name in ["startAt", "startAfter", "endAt", "endBefore", "equalTo"] where fields[name + "Key"] != nil {
            guard fields[name] != nil else {
                throw Self.invalid(
                    "\(name)Key needs \(name): the key only breaks ties between children whose sort value equals \(name)"
                )
            }
            if case .key = order {
                throw Self.invalid(
                    "when ordering by key, \(name)Key can't be used: the bound is the key itself, given as \(name)")
            }
        }

        if let name = startNames.first, let value = fields[name] {
            let inclusive = name != "startAfter"
            let bound = try parseBound(
                name: name, value: value, key: fields[name + "Key"], defaultKey: inclusive ? .min : .max,
                inclusive: inclusive, limits: limits)
            start = bound
            if name == "equalTo" {
                end = try parseBound(
                    name: name, value: value, key: fields[name + "Key"], defaultKey: .max, inclusive: true,
                    limits: limits)
            }
        }
        if let name = endNames.first, name != "equalTo", let value = fields[name] {
            let inclusive = name == "endAt"
            end = try parseBound(
                name: name, value: value, key: fields[name + "Key"], defaultKey: inclusive ? .max : .min,
                inclusive: inclusive, limits: limits)
        }

        let limitNames = ["limitToFirst", "limitToLast"].filter { fields[$0] != nil }
        if limitNames.count > 1 {
            throw Self.invalid("limitToFirst and limitToLast can't be combined: a query has one limit")
        }
        if let name = limitNames.first, let value = fields[name] {
            guard let n = value.int64Value, n > 0, let count = Int(exactly: n) else {
                throw Self.invalid("\(name) must be a positive integer, not \(Self.describe(value))")
            }
            limit = name == "limitToFirst" ? .first(count) : .last(count)
        }
    }

    /// The canonical wire object (for logs and warnings); `QuerySpec(json: spec.json)` is `spec`.
    public var json: JSONValue {
        var members: [JSONMember] = []
        if order != .priority { members.append(JSONMember("orderBy", .string(order.wireName))) }
        var isKeyOrder = false
        if case .key = order { isKeyOrder = true }
        func value(_ bound: QueryBound) -> JSONValue {
            isKeyOrder ? .string(bound.key.wireString) : bound.value.jsonValue
        }
        func add(_ name: String, _ bound: QueryBound, omittedKey: BoundKey) {
            members.append(JSONMember(name, value(bound)))
            if !isKeyOrder, bound.key != omittedKey {
                members.append(JSONMember(name + "Key", .string(bound.key.wireString)))
            }
        }
        if let start, let end, start.inclusive, end.inclusive, isKeyOrder || start.value == end.value,
            start.key == end.key || (!isKeyOrder && start.key == .min && end.key == .max)
        {
            members.append(JSONMember("equalTo", value(start)))
            if !isKeyOrder, start.key == end.key {
                members.append(JSONMember("equalToKey", .string(start.key.wireString)))
            }
        } else {
            if let start {
                if start.inclusive {
                    add("startAt", start, omittedKey: .min)
                } else {
                    add("startAfter", start, omittedKey: .max)
                }
            }
            if let end {
                if end.inclusive {
                    add("endAt", end, omittedKey: .max)
                } else {
                    add("endBefore", end, omittedKey: .min)
                }
            }
        }
        switch limit {
        case .first(let n)?: members.append(JSONMember("limitToFirst", .int(Int64(n))))
        case .last(let n)?: members.append(JSONMember("limitToLast", .int(Int64(n))))
        case nil: break
        }
        return .object(members)
    }

    // MARK: Parsing helpers

    static func parseOrder(_ json: JSONValue, limits: Limits) throws(DatabaseError) -> QueryOrder {
        guard case .string(let name) = json else {
            throw invalid(
                "orderBy must be a string (\"$key\", \"$value\", \"$priority\" or a child path), not \(describe(json))")
        }
        switch name {
        case "$key": return .key
        case "$value": return .value
        case "$priority": return .priority
        default: break
        }
        if name.utf8.first == UInt8(ascii: "$"), !name.utf8.contains(UInt8(ascii: "/")) {
            throw invalid(
                "orderBy \(quoted(name)) is not an order: use \"$key\", \"$value\", \"$priority\" or a child path")
        }
        let path: Path
        do {
            path = try Path.parse(name, limits: limits)
        } catch {
            throw invalid("orderBy \(quoted(name)) is an invalid child path: \(error.message)")
        }
        if path.isRoot {
            throw invalid("orderBy \(quoted(name)) is an invalid child path: a child path must name at least one key")
        }
        return .child(path)
    }

    func parseBound(
        name: String, value: JSONValue, key: JSONValue?, defaultKey: BoundKey, inclusive: Bool, limits: Limits
    ) throws(DatabaseError) -> QueryBound {
        switch order {
        case .key:
            guard case .string(let s) = value else {
                throw Self.invalid(
                    "when ordering by key, \(name) must be a string (a key), not \(Self.describe(value))")
            }
            return QueryBound(value: .null, key: Self.boundKey(unvalidated: s), inclusive: inclusive)
        case .priority:
            switch value {
            case .null, .int, .double, .string: break
            default:
                throw Self.invalid(
                    "when ordering by priority, \(name) must be a valid priority (null, a number or a string), not \(Self.describe(value))"
                )
            }
        case .value, .child:
            switch value {
            case .object, .array: throw Self.invalid("\(name) can't be an object")
            default: break
            }
        }
        let sortValue: IndexValue
        switch value {
        case .null: sortValue = .null
        case .bool(let b): sortValue = .bool(b)
        case .int(let i): sortValue = .number(.int(i))
        case .double(let d):
            guard d.isFinite else { throw Self.invalid("\(name) must be a finite number") }
            sortValue = .number(.normalised(d))
        case .string(let s): sortValue = .string(s)
        case .object, .array: throw Self.invalid("\(name) can't be an object")
        }
        var boundKey = defaultKey
        if let key {
            guard case .string(let s) = key else {
                throw Self.invalid("\(name)Key must be a string (a key), not \(Self.describe(key))")
            }
            if s.utf8Equals(Key.minName) {
                boundKey = .min
            } else if s.utf8Equals(Key.maxName) {
                boundKey = .max
            } else {
                do {
                    boundKey = .key(try Key.validated(s, limits: limits))
                } catch {
                    throw Self.invalid("\(name)Key \(quoted(s)) is an invalid key: \(error.message)")
                }
            }
        }
        return QueryBound(value: sortValue, key: boundKey, inclusive: inclusive)
    }

    /// A key-order bound: any string, with the sentinels' wire spellings mapped to the sentinels.
    static func boundKey(unvalidated s: String) -> BoundKey {
        if s.utf8Equals(Key.minName) { return .min }
        if s.utf8Equals(Key.maxName) { return .max }
        return .key(Key(s))
    }

    static func repeatedMessage(_ name: String) -> String {
        switch name {
        case "orderBy": return "orderBy appears twice: a query has one order"
        case "limitToFirst", "limitToLast": return "\(name) appears twice: a query has one limit"
        case "startAt", "startAfter":
            return "\(name) appears twice: a query has one starting point (startAt, startAfter or equalTo)"
        case "endAt", "endBefore":
            return "\(name) appears twice: a query has one ending point (endAt, endBefore or equalTo)"
        case "equalTo": return "equalTo appears twice: a query has one starting and one ending point"
        default: return "\(name) appears twice"
        }
    }

    static func invalid(_ message: String) -> DatabaseError {
        DatabaseError(.invalidQuery, message)
    }

    static func describe(_ json: JSONValue) -> String {
        switch json {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .string(let s): return "the string \(quoted(s))"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
