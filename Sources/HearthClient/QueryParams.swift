internal import HearthCore
internal import HearthJSON

/// The query a chain of `query…` calls builds, validated after every call with the server's own
/// rules (`QuerySpec(json:)`; docs/PROTOCOL.md, "Queries"), so an invalid query is refused on the client.
struct QueryParams: Sendable {
    struct Bound: Sendable {
        /// The wire member: `startAt`, `startAfter`, `endAt`, `endBefore` or `equalTo`.
        let name: String
        let value: JSONValue
        let key: String?
    }

    private var orderBy: String?
    private var start: Bound?
    private var end: Bound?
    private var limit: (name: String, count: UInt)?
    /// The validated query.
    private(set) var spec: QuerySpec = .default
    /// The first invalid call, which makes every use of the query fail.
    private(set) var error: HearthError?

    static let `default` = QueryParams()

    func ordered(by order: String, method: String) -> QueryParams {
        changed(method) { (params: inout QueryParams) throws(HearthError) in
            guard params.orderBy == nil else {
                throw HearthError(.invalidQuery, "you can't combine multiple orderBy calls")
            }
            params.orderBy = order
        }
    }

    func starting(_ bound: Bound, method: String) -> QueryParams {
        changed(method) { (params: inout QueryParams) throws(HearthError) in
            guard params.start == nil else {
                throw HearthError(
                    .invalidQuery, "a starting point was already set (by queryStarting or queryEqual)")
            }
            params.start = bound
        }
    }

    func ending(_ bound: Bound, method: String) -> QueryParams {
        changed(method) { (params: inout QueryParams) throws(HearthError) in
            guard params.end == nil else {
                throw HearthError(.invalidQuery, "an ending point was already set (by queryEnding or queryEqual)")
            }
            params.end = bound
        }
    }

    func equal(_ bound: Bound, method: String) -> QueryParams {
        changed(method) { (params: inout QueryParams) throws(HearthError) in
            guard params.start == nil else {
                throw HearthError(.invalidQuery, "a starting point was already set (by queryStarting or queryEqual)")
            }
            guard params.end == nil else {
                throw HearthError(.invalidQuery, "an ending point was already set (by queryEnding or queryEqual)")
            }
            params.start = bound
            params.end = bound
        }
    }

    func limited(_ name: String, _ count: UInt, method: String) -> QueryParams {
        changed(method) { (params: inout QueryParams) throws(HearthError) in
            guard params.limit == nil else {
                throw HearthError(
                    .invalidQuery, "a limit was already set (by queryLimited(toFirst:) or queryLimited(toLast:))")
            }
            params.limit = (name, count)
        }
    }

    /// This query made unusable by `error` (the first error is kept).
    func failed(_ error: HearthError) -> QueryParams {
        var next = self
        next.error = self.error ?? error
        return next
    }

    private func changed(_ method: String, _ change: (inout QueryParams) throws(HearthError) -> Void) -> QueryParams {
        guard error == nil else { return self }
        var next = self
        do {
            try change(&next)
            next.spec = try QuerySpec(json: next.wire, limits: .default)
        } catch let failure as HearthError {
            next.error = HearthError(.invalidQuery, "\(method): \(failure.message)")
        } catch let failure as DatabaseError {
            next.error = HearthError(.invalidQuery, "\(method): \(failure.message)")
        } catch {
            next.error = HearthError(.invalidQuery, "\(method): \(error)")
        }
        return next
    }

    /// The wire query object as built by the calls (validated into `spec`).
    private var wire: JSONValue {
        var members: [JSONMember] = []
        if let orderBy { members.append(JSONMember("orderBy", .string(orderBy))) }
        for bound in [start, end].compactMap({ $0 }) {
            if bound.name == "equalTo", members.contains(where: { $0.key == "equalTo" }) { continue }
            members.append(JSONMember(bound.name, bound.value))
            if let key = bound.key { members.append(JSONMember(bound.name + "Key", .string(key))) }
        }
        if let limit {
            members.append(
                JSONMember(limit.name, Int64(exactly: limit.count).map(JSONValue.int) ?? .double(Double(limit.count))))
        }
        return .object(members)
    }
}
