public import HearthJSON

/// The `query` variable of `.read` rules (docs/rules.md, "The `query` variable"), built from the protocol's wire query
/// object: `{"orderBy": "$key"|"$value"|"$priority"|"child/path", "startAt": V, "startAfter": V,
/// "endAt": V, "endBefore": V, "equalTo": V, "limitToFirst": N, "limitToLast": N, "…Key": K}`.
///
/// `startAfter` is reported as `query.startAt` and `endBefore` as `query.endAt`;
/// `equalTo` sets only `query.equalTo`; the `…Key` arguments are not exposed. The
/// object is not validated here (the request decoder does that): members of the wrong type are
/// ignored.
public struct RuleQuery: Sendable {
    /// The fields, behind one reference so that evaluators copy a pointer, not the fields.
    final class Fields: Sendable {
        let orderByKey: Bool
        let orderByValue: Bool
        let orderByPriority: Bool
        let orderByChild: String?
        let startAt: RuleValue
        let endAt: RuleValue
        let equalTo: RuleValue
        let limitToFirst: RuleValue
        let limitToLast: RuleValue

        init(_ parsed: Parsed) {
            orderByKey = parsed.orderByKey
            orderByValue = parsed.orderByValue
            orderByPriority = parsed.orderByPriority
            orderByChild = parsed.orderByChild
            startAt = parsed.startAt
            endAt = parsed.endAt
            equalTo = parsed.equalTo
            limitToFirst = parsed.limitToFirst
            limitToLast = parsed.limitToLast
        }
    }

    struct Parsed {
        var orderByKey = false
        var orderByValue = false
        var orderByPriority = false
        var orderByChild: String?
        var startAt: RuleValue = .null
        var endAt: RuleValue = .null
        var equalTo: RuleValue = .null
        var limitToFirst: RuleValue = .null
        var limitToLast: RuleValue = .null
    }

    /// nil for no query.
    let fields: Fields?

    /// No query: the three booleans false and every other field null.
    public static let none = RuleQuery(fields: nil)

    private init(fields: Fields?) { self.fields = fields }

    /// The query described by a wire query object (`null` means no query).
    public init(json: JSONValue) {
        guard case .object(let members) = json else {
            fields = nil
            return
        }
        var parsed = Parsed()
        for member in members {
            switch member.key {
            case "orderBy":
                guard case .string(let order) = member.value else { continue }
                parsed.orderByKey = order == "$key"
                parsed.orderByValue = order == "$value"
                parsed.orderByPriority = order == "$priority"
                parsed.orderByChild = parsed.orderByKey || parsed.orderByValue || parsed.orderByPriority ? nil : order
            case "startAt", "startAfter": parsed.startAt = RuleValue(scalar: member.value)
            case "endAt", "endBefore": parsed.endAt = RuleValue(scalar: member.value)
            case "equalTo": parsed.equalTo = RuleValue(scalar: member.value)
            case "limitToFirst":
                if member.value.isNumber { parsed.limitToFirst = RuleValue(scalar: member.value) }
            case "limitToLast":
                if member.value.isNumber { parsed.limitToLast = RuleValue(scalar: member.value) }
            default: continue
            }
        }
        fields = Fields(parsed)
    }

    /// The fields rules can name, with their static types (docs/rules.md, "Values and types").
    enum Field: Sendable {
        case orderByKey, orderByValue, orderByPriority, orderByChild
        case startAt, endAt, equalTo, limitToFirst, limitToLast

        init?(name: String) {
            switch name {
            case "orderByKey": self = .orderByKey
            case "orderByValue": self = .orderByValue
            case "orderByPriority": self = .orderByPriority
            case "orderByChild": self = .orderByChild
            case "startAt": self = .startAt
            case "endAt": self = .endAt
            case "equalTo": self = .equalTo
            case "limitToFirst": self = .limitToFirst
            case "limitToLast": self = .limitToLast
            default: return nil
            }
        }

        var staticType: ValueType {
            switch self {
            case .orderByKey, .orderByValue, .orderByPriority: return .bool
            case .orderByChild: return [.string, .null]
            case .startAt, .endAt, .equalTo: return [.null, .bool, .number, .string]
            case .limitToFirst, .limitToLast: return [.number, .null]
            }
        }
    }

    func value(of field: Field) -> RuleValue {
        guard let fields else {
            switch field {
            case .orderByKey, .orderByValue, .orderByPriority: return .bool(false)
            default: return .null
            }
        }
        switch field {
        case .orderByKey: return .bool(fields.orderByKey)
        case .orderByValue: return .bool(fields.orderByValue)
        case .orderByPriority: return .bool(fields.orderByPriority)
        case .orderByChild: return fields.orderByChild.map { .string($0) } ?? .null
        case .startAt: return fields.startAt
        case .endAt: return fields.endAt
        case .equalTo: return fields.equalTo
        case .limitToFirst: return fields.limitToFirst
        case .limitToLast: return fields.limitToLast
        }
    }
}
