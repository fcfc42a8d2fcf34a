public import HearthJSON

/// The `query` variable of `.read` rules (rules.md §4.2), built from the protocol's wire query
/// object: `{"orderBy": "$key"|"$value"|"$priority"|"child/path", "startAt": V, "startAfter": V,
/// "endAt": V, "endBefore": V, "equalTo": V, "limitToFirst": N, "limitToLast": N, "…Key": K}`.
///
/// `startAfter` is reported as `query.startAt` and `endBefore` as `query.endAt` (§10 #3);
/// `equalTo` sets only `query.equalTo` (§10 #2); the `…Key` arguments are not exposed. The
/// object is not validated here (the request decoder does that): members of the wrong type are
/// ignored.
public struct RuleQuery: Sendable {
    var orderByKey = false
    var orderByValue = false
    var orderByPriority = false
    var orderByChild: String?
    var startAt: RuleValue = .null
    var endAt: RuleValue = .null
    var equalTo: RuleValue = .null
    var limitToFirst: RuleValue = .null
    var limitToLast: RuleValue = .null

    /// No query: the three booleans false and every other field null.
    public static let none = RuleQuery()

    init() {}

    /// The query described by a wire query object (`null` means no query).
    public init(json: JSONValue) {
        guard case .object(let members) = json else { return }
        for member in members {
            switch member.key {
            case "orderBy":
                guard case .string(let order) = member.value else { continue }
                orderByKey = order == "$key"
                orderByValue = order == "$value"
                orderByPriority = order == "$priority"
                orderByChild = orderByKey || orderByValue || orderByPriority ? nil : order
            case "startAt", "startAfter": startAt = RuleValue(scalar: member.value)
            case "endAt", "endBefore": endAt = RuleValue(scalar: member.value)
            case "equalTo": equalTo = RuleValue(scalar: member.value)
            case "limitToFirst":
                if member.value.isNumber { limitToFirst = RuleValue(scalar: member.value) }
            case "limitToLast":
                if member.value.isNumber { limitToLast = RuleValue(scalar: member.value) }
            default: continue
            }
        }
    }

    /// The fields rules can name, with their static types (§6.9).
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
        switch field {
        case .orderByKey: return .bool(orderByKey)
        case .orderByValue: return .bool(orderByValue)
        case .orderByPriority: return .bool(orderByPriority)
        case .orderByChild: return orderByChild.map { .string($0) } ?? .null
        case .startAt: return startAt
        case .endAt: return endAt
        case .equalTo: return equalTo
        case .limitToFirst: return limitToFirst
        case .limitToLast: return limitToLast
        }
    }
}
