import HearthJSON

/// The query parameters of a REST read or stream (docs/REST.md, "Query parameters"), turned into the line protocol's
/// query object, which `QuerySpec(json:)` then checks exactly as it checks a `get`'s.
enum RESTQuery {
    static let bounds = ["startAt", "startAfter", "endAt", "endBefore", "equalTo"]
    static let parameterNames = ["orderBy"] + bounds + ["limitToFirst", "limitToLast"]

    /// The wire query, or nil when the request has no query parameter.
    static func wireQuery(_ parameters: QueryParameters, limits: JSONLimits) throws(RESTError) -> JSONValue? {
        guard parameterNames.contains(where: { parameters[$0] != nil }) else { return nil }
        guard let orderBy = parameters["orderBy"] else {
            throw .badRequest("orderBy must be defined when other query parameters are defined")
        }
        var members: [JSONMember] = []
        guard case .string(let order)? = try? orderBy.json(limits: limits) else {
            throw .badRequest("orderBy must be a valid JSON encoded path")
        }
        members.append(JSONMember("orderBy", .string(order)))
        for name in bounds {
            guard let parameter = parameters[name] else { continue }
            let (value, key) = try bound(parameter, limits: limits)
            members.append(JSONMember(name, value))
            if let key { members.append(JSONMember(name + "Key", .string(key))) }
        }
        for name in ["limitToFirst", "limitToLast"] {
            guard let parameter = parameters[name] else { continue }
            guard let limit = Int64(parameter.decoded.trimmingCharacters), limit > 0 else {
                throw .badRequest("\(name) must be a positive integer, not \"\(parameter.decoded)\"")
            }
            members.append(JSONMember(name, .int(limit)))
        }
        return .object(members)
    }

    /// A bound: a JSON primitive, optionally followed by `,` and a JSON string key
    /// (`startAt=0.6,"pterodactyl"`).
    static func bound(
        _ parameter: QueryParameters.Value, limits: JSONLimits
    ) throws(RESTError) -> (value: JSONValue, key: String?) {
        let invalid = RESTError.badRequest("Constraint index field must be a JSON primitive")
        for text in [parameter.decoded, parameter.plusKept] {
            if let value = try? JSONParser.parse(text, limits: limits) {
                guard value.isPrimitive else { throw invalid }
                return (value, nil)
            }
            // The value and the key, split at a comma that leaves valid JSON on both sides.
            var index = text.startIndex
            while let comma = text[index...].firstIndex(of: ",") {
                if let value = try? JSONParser.parse(String(text[..<comma]), limits: limits),
                    case .string(let key)? = try? JSONParser.parse(
                        String(text[text.index(after: comma)...]), limits: limits)
                {
                    guard value.isPrimitive else { throw invalid }
                    return (value, key)
                }
                index = text.index(after: comma)
            }
        }
        throw invalid
    }
}

extension JSONValue {
    /// Whether this is a string, number, boolean or null.
    fileprivate var isPrimitive: Bool {
        switch self {
        case .object, .array: return false
        default: return true
        }
    }
}

extension String {
    fileprivate var trimmingCharacters: String { Substring(self).trimmingSpaces }
}
