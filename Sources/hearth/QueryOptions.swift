import ArgumentParser
import HearthClient
import HearthJSON

/// The query flags of `get` and `listen`: an order, bounds (JSON values, each with an optional
/// key) and a limit, applied with HearthClient's `query…` methods, which validate them. A bound
/// takes the next argument whatever it looks like (`--start-at -1`): one that is not JSON is
/// refused with the quoting to use.
struct QueryOptions: ParsableArguments {
    @Flag(help: "Order children by key.") var orderByKey = false
    @Flag(help: "Order children by value.") var orderByValue = false
    @Flag(help: "Order children by priority.") var orderByPriority = false
    @Option(help: ArgumentHelp("Order children by the value at this child path.", valueName: "path"))
    var orderByChild: String?

    @Option(
        parsing: .unconditional, help: ArgumentHelp("Start at this sort value (JSON).", valueName: "json"),
        transform: JSONArgument.parse)
    var startAt: JSONArgument?
    @Option(help: ArgumentHelp("With --start-at: the first key among equal values.", valueName: "key"))
    var startAtKey: String?
    @Option(
        parsing: .unconditional, help: ArgumentHelp("Start after this sort value (JSON).", valueName: "json"),
        transform: JSONArgument.parse)
    var startAfter: JSONArgument?
    @Option(help: ArgumentHelp("With --start-after: start after this key.", valueName: "key"))
    var startAfterKey: String?
    @Option(
        parsing: .unconditional, help: ArgumentHelp("End at this sort value (JSON).", valueName: "json"),
        transform: JSONArgument.parse)
    var endAt: JSONArgument?
    @Option(help: ArgumentHelp("With --end-at: the last key among equal values.", valueName: "key"))
    var endAtKey: String?
    @Option(
        parsing: .unconditional, help: ArgumentHelp("End before this sort value (JSON).", valueName: "json"),
        transform: JSONArgument.parse)
    var endBefore: JSONArgument?
    @Option(help: ArgumentHelp("With --end-before: end before this key.", valueName: "key"))
    var endBeforeKey: String?
    @Option(
        parsing: .unconditional, help: ArgumentHelp("Only children with this sort value (JSON).", valueName: "json"),
        transform: JSONArgument.parse)
    var equalTo: JSONArgument?
    @Option(help: ArgumentHelp("With --equal-to: only the child with this key.", valueName: "key"))
    var equalToKey: String?

    @Option(help: ArgumentHelp("Keep the first N children of the range.", valueName: "N")) var limitToFirst: UInt?
    @Option(help: ArgumentHelp("Keep the last N children of the range.", valueName: "N")) var limitToLast: UInt?

    func validate() throws {
        let orders = [orderByKey, orderByValue, orderByPriority, orderByChild != nil].filter { $0 }.count
        if orders > 1 {
            throw ValidationError(
                "give at most one of --order-by-key, --order-by-value, --order-by-priority, --order-by-child")
        }
        let pairs: [(String, JSONArgument?, String?)] = [
            ("start-at", startAt, startAtKey), ("start-after", startAfter, startAfterKey), ("end-at", endAt, endAtKey),
            ("end-before", endBefore, endBeforeKey), ("equal-to", equalTo, equalToKey),
        ]
        for (name, value, key) in pairs where value == nil && key != nil {
            throw ValidationError("--\(name)-key needs --\(name)")
        }
    }

    /// Whether any query flag was given.
    var isSet: Bool {
        orderByKey || orderByValue || orderByPriority || orderByChild != nil || startAt != nil || startAfter != nil
            || endAt != nil || endBefore != nil || equalTo != nil || limitToFirst != nil || limitToLast != nil
    }

    /// The flag for each name a query error may use: HearthClient's methods and the
    /// protocol's query fields. Longer names come first, so that a name is never replaced inside
    /// a longer one.
    static let flagNames: [(String, String)] = [
        ("queryOrdered(byChild:)", "--order-by-child"), ("queryOrderedByKey()", "--order-by-key"),
        ("queryOrderedByValue()", "--order-by-value"), ("queryOrderedByPriority()", "--order-by-priority"),
        ("queryLimited(toFirst:) or queryLimited(toLast:)", "--limit-to-first or --limit-to-last"),
        ("queryStarting or queryEqual", "--start-at, --start-after or --equal-to"),
        ("queryEnding or queryEqual", "--end-at, --end-before or --equal-to"),
        ("multiple orderBy calls", "several orders"), ("startAfterKey", "--start-after-key"),
        ("endBeforeKey", "--end-before-key"), ("startAtKey", "--start-at-key"), ("equalToKey", "--equal-to-key"),
        ("endAtKey", "--end-at-key"), ("startAfter", "--start-after"), ("endBefore", "--end-before"),
        ("startAt", "--start-at"), ("equalTo", "--equal-to"), ("endAt", "--end-at"),
        ("limitToFirst", "--limit-to-first"), ("limitToLast", "--limit-to-last"), ("orderBy", "the order"),
    ]

    /// A query error in the terms of this command's flags: without the name of the HearthClient
    /// method that found it (`queryStarting(atValue:childKey:): …`) and with each protocol field
    /// (`startAtKey`) replaced by its flag (`--start-at-key`).
    static func inFlagTerms(_ message: String) -> String {
        var text = Substring(message)
        // "queryStarting(atValue:childKey:): the reason" → "the reason".
        if text.hasPrefix("query"), let close = text.firstRange(of: "): ") {
            text = text[close.upperBound...]
        }
        var result = ""
        var rest = text
        outer: while !rest.isEmpty {
            let startsWord = result.last.map { !($0.isLetter || $0.isNumber) } ?? true
            if startsWord {
                for (name, flag) in flagNames where rest.hasPrefix(name) {
                    let after = rest.dropFirst(name.count)
                    if let next = after.first, next.isLetter || next.isNumber { continue }
                    result += flag
                    rest = after
                    continue outer
                }
            }
            result.append(rest.removeFirst())
        }
        return result
    }

    /// `reference` narrowed by the flags, in the order order, bounds, limit.
    func apply(to reference: DatabaseReference) -> DatabaseQuery {
        var query: DatabaseQuery = reference
        if orderByKey { query = query.queryOrderedByKey() }
        if orderByValue { query = query.queryOrderedByValue() }
        if orderByPriority { query = query.queryOrderedByPriority() }
        if let orderByChild { query = query.queryOrdered(byChild: orderByChild) }
        if let startAt { query = query.queryStarting(atValue: startAt.value, childKey: startAtKey) }
        if let startAfter { query = query.queryStarting(afterValue: startAfter.value, childKey: startAfterKey) }
        if let endAt { query = query.queryEnding(atValue: endAt.value, childKey: endAtKey) }
        if let endBefore { query = query.queryEnding(beforeValue: endBefore.value, childKey: endBeforeKey) }
        if let equalTo { query = query.queryEqual(toValue: equalTo.value, childKey: equalToKey) }
        if let limitToFirst { query = query.queryLimited(toFirst: limitToFirst) }
        if let limitToLast { query = query.queryLimited(toLast: limitToLast) }
        return query
    }
}
