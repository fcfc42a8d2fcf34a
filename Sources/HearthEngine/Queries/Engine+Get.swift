import HearthCore
import HearthProtocol

/// Reads: a value, or a query's window (through an index the views keep), after the read rules.
extension Engine {
    func get(
        _ path: Path, options: ReadOptions, identity: AuthContext?, now: Int64, reply: Reply, batch: inout Batch
    ) {
        if let denial = readDenial("get", at: path, query: options.ruleQuery, identity: identity, now: now) {
            respond(.failure(denial), to: reply, batch: &batch)
            return
        }
        guard let query = options.query else {
            respond(
                .value(database.root.child(at: path), rev: database.rev, options: options), to: reply, batch: &batch)
            return
        }
        let queryStarted = ContinuousClock.now
        switch indexCheck(query.order, at: path) {
        case .failure(let error):
            respond(.failure(error), to: reply, batch: &batch)
        case .success(let warning):
            let result = views.window(
                query, at: path, of: database.root, declared: isDeclaredIndex(query.order, at: path))
            respond(.window(result, rev: database.rev, options: options, warning: warning), to: reply, batch: &batch)
            metrics.queryStats.queryFinished(query, at: path, duration: .now - queryStarted)
        }
    }

    /// Whether the rules declare an index for `order` at `path` (kept for good once built).
    /// Key order needs no index; priority indexes live while subscriptions use them.
    func isDeclaredIndex(_ order: QueryOrder, at path: Path) -> Bool {
        switch order {
        case .key, .priority: return false
        case .value, .child: return indexRules.isDeclared(order, at: path)
        }
    }

    /// Whether a query ordered by `order` at `path` may run: declared indexes pass; others pass
    /// with a warning (logged once per location and order), or fail under `strictIndexes`.
    func indexCheck(_ order: QueryOrder, at path: Path) -> Result<String?, DatabaseError> {
        if indexRules.isDeclared(order, at: path) { return .success(nil) }
        let name: String
        switch order {
        case .value: name = ".value"
        case .child(let child): name = child.segments.map(\.string).joined(separator: "/")
        case .key, .priority: return .success(nil)
        }
        let advice = "add \".indexOn\": \"\(name)\" at \(path) to the rules"
        metrics.queryStats.unindexedQuery(order, at: path, refused: strictIndexes)
        if strictIndexes {
            return .failure(DatabaseError(.indexNotDefined, "no index for this query: \(advice)"))
        }
        if warnedIndexes.insert(["\(path)", name]).inserted {
            logger.warning("query on an undeclared index", metadata: ["path": "\(path)", "orderBy": "\(name)"])
        }
        return .success("index_not_defined: \(advice)")
    }
}
