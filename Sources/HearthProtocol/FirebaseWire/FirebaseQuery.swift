package import HearthCore
package import HearthJSON

/// Firebase's query objects (`{"sp":…,"sn":…,"sin":…,"ep":…,"en":…,"ein":…,"l":…,"vf":…,"i":…}`)
/// rewritten as the line protocol's (docs/PROTOCOL.md, "Queries"), so that one parser checks both
/// and the rules see the same `query`.
package enum FirebaseQuery {
    /// The line protocol's query for a Firebase query object; nil for none (absent, `null` or
    /// `{}`).
    package static func lineQuery(_ object: JSONValue?) throws(DatabaseError) -> JSONValue? {
        guard let object, object != .null else { return nil }
        guard case .object(let members) = object else {
            throw DatabaseError(.invalidQuery, "a query must be an object")
        }
        guard !members.isEmpty else { return nil }
        var query: [JSONMember] = []
        let index = object["i"]?.stringValue
        switch index {
        case nil: query.append(JSONMember("orderBy", .string("$priority")))
        case ".key": query.append(JSONMember("orderBy", .string("$key")))
        case ".value": query.append(JSONMember("orderBy", .string("$value")))
        case ".priority": query.append(JSONMember("orderBy", .string("$priority")))
        case let child?: query.append(JSONMember("orderBy", .string(child)))
        }
        let byKey = index == ".key"
        if let value = object["sp"] {
            let inclusive = object["sin"]?.boolValue ?? true
            let name = inclusive ? "startAt" : "startAfter"
            query.append(JSONMember(name, value))
            if !byKey, let key = object["sn"], key != .null { query.append(JSONMember(name + "Key", key)) }
        }
        if let value = object["ep"] {
            let inclusive = object["ein"]?.boolValue ?? true
            let name = inclusive ? "endAt" : "endBefore"
            query.append(JSONMember(name, value))
            if !byKey, let key = object["en"], key != .null { query.append(JSONMember(name + "Key", key)) }
        }
        if let limit = object["l"] {
            query.append(JSONMember(object["vf"]?.stringValue == "l" ? "limitToFirst" : "limitToLast", limit))
        }
        return .object(query)
    }
}
