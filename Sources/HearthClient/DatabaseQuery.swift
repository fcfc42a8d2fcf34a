internal import HearthCore
internal import HearthJSON

/// A location plus an order, bounds and a limit, to read or observe. Every `DatabaseReference`
/// is a query (the whole location in priority order); the `query…` methods return narrower ones.
///
/// An invalid query (or path) is not refused when built: every read or observe of it fails at
/// once with the error (`HearthError`, code `invalid_query` or `invalid_path`).
///
/// `@unchecked Sendable` only because the class is not final (`DatabaseReference` extends it):
/// every stored property is an immutable `let` of a Sendable type.
public class DatabaseQuery: @unchecked Sendable {
    /// The database this query reads.
    public let database: Database
    /// The location (the root when the path given was invalid; then `pathError` is set).
    let path: Path
    /// Why the path given was invalid.
    let pathError: HearthError?
    let params: QueryParams

    init(database: Database, path: Path, pathError: HearthError?, params: QueryParams) {
        self.database = database
        self.path = path
        self.pathError = pathError
        self.params = params
    }

    var repo: Repo { database.repo }

    /// The reference to the query's location.
    public var ref: DatabaseReference {
        DatabaseReference(database: database, path: path, pathError: pathError)
    }

    /// The location and query, or the error that makes them unusable.
    func validated() throws(HearthError) -> (Path, QuerySpec) {
        if let pathError { throw pathError }
        if let error = params.error { throw error }
        return (path, params.spec)
    }

    private func with(_ params: QueryParams) -> DatabaseQuery {
        DatabaseQuery(database: database, path: path, pathError: pathError, params: params)
    }

    private func bound(_ name: String, _ value: Any?, _ key: String?) -> Result<QueryParams.Bound, HearthError> {
        Result { () throws(HearthError) -> QueryParams.Bound in
            QueryParams.Bound(name: name, value: try ValueConversion.json(from: value), key: key)
        }
    }

    private func withBound(
        _ method: String, _ name: String, _ value: Any?, _ key: String?,
        _ apply: (QueryParams, QueryParams.Bound) -> QueryParams
    ) -> DatabaseQuery {
        switch bound(name, value, key) {
        case .success(let bound): return with(apply(params, bound))
        case .failure(let error): return with(params.failed(HearthError(.invalidQuery, "\(method): \(error.message)")))
        }
    }

    // MARK: Orders

    /// Orders children by the value at `path` inside each child (slashes allowed).
    public func queryOrdered(byChild path: String) -> DatabaseQuery {
        switch path {
        case "$key":
            return with(
                params.failed(
                    HearthError(
                        .invalidQuery,
                        "queryOrdered(byChild:): \"$key\" is not a child path; use queryOrderedByKey() instead")))
        case "$value":
            return with(
                params.failed(
                    HearthError(
                        .invalidQuery,
                        "queryOrdered(byChild:): \"$value\" is not a child path; use queryOrderedByValue() instead")))
        case "$priority":
            return with(
                params.failed(
                    HearthError(
                        .invalidQuery,
                        "queryOrdered(byChild:): \"$priority\" is not a child path; use queryOrderedByPriority() instead"
                    )))
        default: return with(params.ordered(by: path, method: "queryOrdered(byChild:)"))
        }
    }

    /// Orders children by key.
    public func queryOrderedByKey() -> DatabaseQuery { with(params.ordered(by: "$key", method: "queryOrderedByKey()")) }

    /// Orders children by their value.
    public func queryOrderedByValue() -> DatabaseQuery {
        with(params.ordered(by: "$value", method: "queryOrderedByValue()"))
    }

    /// Orders children by priority (the default order).
    public func queryOrderedByPriority() -> DatabaseQuery {
        with(params.ordered(by: "$priority", method: "queryOrderedByPriority()"))
    }

    // MARK: Limits

    /// Keeps the first `limit` children of the range (`limit` ≥ 1).
    public func queryLimited(toFirst limit: UInt) -> DatabaseQuery {
        with(params.limited("limitToFirst", limit, method: "queryLimited(toFirst:)"))
    }

    /// Keeps the last `limit` children of the range (`limit` ≥ 1), still in ascending order.
    public func queryLimited(toLast limit: UInt) -> DatabaseQuery {
        with(params.limited("limitToLast", limit, method: "queryLimited(toLast:)"))
    }

    // MARK: Bounds

    /// Starts at children whose sort value is `startValue` or after.
    public func queryStarting(atValue startValue: Any?) -> DatabaseQuery {
        withBound("queryStarting(atValue:)", "startAt", startValue, nil) {
            $0.starting($1, method: "queryStarting(atValue:)")
        }
    }

    /// Starts at (`startValue`, `childKey`): children with sort value `startValue` need a key ≥ `childKey`.
    public func queryStarting(atValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        withBound("queryStarting(atValue:childKey:)", "startAt", startValue, childKey) {
            $0.starting($1, method: "queryStarting(atValue:childKey:)")
        }
    }

    /// Starts after every child whose sort value is `startValue`.
    public func queryStarting(afterValue startValue: Any?) -> DatabaseQuery {
        withBound("queryStarting(afterValue:)", "startAfter", startValue, nil) {
            $0.starting($1, method: "queryStarting(afterValue:)")
        }
    }

    /// Starts after (`startValue`, `childKey`).
    public func queryStarting(afterValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        withBound("queryStarting(afterValue:childKey:)", "startAfter", startValue, childKey) {
            $0.starting($1, method: "queryStarting(afterValue:childKey:)")
        }
    }

    /// Ends at children whose sort value is `endValue` (included).
    public func queryEnding(atValue endValue: Any?) -> DatabaseQuery {
        withBound("queryEnding(atValue:)", "endAt", endValue, nil) { $0.ending($1, method: "queryEnding(atValue:)") }
    }

    /// Ends at (`endValue`, `childKey`): children with sort value `endValue` need a key ≤ `childKey`.
    public func queryEnding(atValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        withBound("queryEnding(atValue:childKey:)", "endAt", endValue, childKey) {
            $0.ending($1, method: "queryEnding(atValue:childKey:)")
        }
    }

    /// Ends before every child whose sort value is `endValue`.
    public func queryEnding(beforeValue endValue: Any?) -> DatabaseQuery {
        withBound("queryEnding(beforeValue:)", "endBefore", endValue, nil) {
            $0.ending($1, method: "queryEnding(beforeValue:)")
        }
    }

    /// Ends before (`endValue`, `childKey`).
    public func queryEnding(beforeValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        withBound("queryEnding(beforeValue:childKey:)", "endBefore", endValue, childKey) {
            $0.ending($1, method: "queryEnding(beforeValue:childKey:)")
        }
    }

    /// Only children whose sort value is `value`.
    public func queryEqual(toValue value: Any?) -> DatabaseQuery {
        withBound("queryEqual(toValue:)", "equalTo", value, nil) { $0.equal($1, method: "queryEqual(toValue:)") }
    }

    /// Only the child at (`value`, `childKey`).
    public func queryEqual(toValue value: Any?, childKey: String?) -> DatabaseQuery {
        withBound("queryEqual(toValue:childKey:)", "equalTo", value, childKey) {
            $0.equal($1, method: "queryEqual(toValue:childKey:)")
        }
    }
}
