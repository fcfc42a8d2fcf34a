import HearthCore
import HearthProtocol

/// Writes: set, update, remove, setPriority and transactions, and push; and what every applied
/// write does next (the change log, the read grants that depend on data, the views).
extension Engine {
    func apply(
        _ write: Write, kind: WriteKind, request: Request, identity: AuthContext?, now: Int64, reply: Reply,
        batch: inout Batch
    ) {
        let tag = request.writeID.map {
            WriteTag(id: $0, kind: kind == .transaction ? .transaction : .write, at: now)
        }
        switch applyChecked(
            write, operation: kind.operationName, at: write.requestPath(kind), identity: identity, now: now,
            tag: tag, batch: &batch)
        {
        case .committed(let rev):
            if request.answerWithStoredValue {
                acknowledge(
                    .stored(database.root.child(at: write.requestPath(kind).withoutPriority), key: nil, rev: rev),
                    to: reply, batch: &batch)
            } else {
                acknowledge(
                    kind == .transaction ? .transactionCommitted(rev: rev) : .committed(rev: rev), to: reply,
                    batch: &batch)
            }
        case .denied(let denial):
            respond(.failure(denial), to: reply, batch: &batch)
        case .stale(let current):
            if case .transaction(let path, _, _, _) = write,
                let denial = staleTransactionDenial(write, at: path, identity: identity, now: now)
            {
                respond(.failure(denial), to: reply, batch: &batch)
                return
            }
            respond(.stale(current: current), to: reply, batch: &batch)
        }
    }

    func push(
        _ value: PreparedValue, under path: Path, request: Request, identity: AuthContext?, now: Int64, reply: Reply,
        batch: inout Batch
    ) {
        let key = pushIDs.next(now: now)
        let write = Write.set(path: path.appending(Key(key)), value: value)
        let tag = request.writeID.map { WriteTag(id: $0, kind: .push, at: now) }
        switch applyChecked(write, operation: "push", at: path, identity: identity, now: now, tag: tag, batch: &batch) {
        case .committed(let rev):
            acknowledge(
                request.answerWithStoredValue
                    ? .stored(database.root.child(at: write.requestPath(.set)), key: key, rev: rev)
                    : .pushed(key: key, rev: rev), to: reply, batch: &batch)
        case .denied(let denial):
            respond(.failure(denial), to: reply, batch: &batch)
        case .stale:
            respond(.failure(DatabaseError(.internal, "push did not commit")), to: reply, batch: &batch)
        }
    }

    /// Brings subscriptions up to date with a committed write: first the ones whose read rules
    /// no longer allow them are cancelled, so that they never see the data that revoked them;
    /// then the views raise their events. The batch keeps `before` to undo the write.
    func afterWrite(_ write: Write, before: Node, rev: UInt64, now: Int64, batch: inout Batch) {
        let paths = write.paths
        batch.undo.wrote(over: before)
        changeLog.record(
            rev: rev, paths: paths, before: before, after: database.root, setsNonEmptyValue: write.setsNonEmptyValue)
        recheckDataDependentGrants(now: now, batch: &batch)
        views.apply(write: write, paths: paths, before: before, after: database.root, rev: rev, batch: &batch)
    }

    /// The path and value of `write` when it can be applied in place
    /// (`Database.applyInPlace(settingNonEmpty:at:now:)`), nil when something needs the whole
    /// old tree: a write that may empty or reshape an ancestor (the change log compares old and
    /// new), or one that a view or index watches (its events compare them). The caller checks
    /// that no rules apply (they compare them too). Without a reference to the old tree, the
    /// nodes of the written path that no snapshot shares (a reader's capture, a compaction's)
    /// change in place, which is what makes a burst of writes to the same places allocate once
    /// rather than once per write.
    func inPlaceSet(_ write: Write) -> (path: Path, value: PreparedValue)? {
        guard let set = write.nonEmptySet, !views.watches(CollectionOfOne(set.path)) else { return nil }
        return set
    }

    /// `afterWrite` for a write applied in place (`inPlaceSet`): no view watches it, and the
    /// change log and the batch keep its undo points.
    func afterWrite(rev: UInt64, kept: [(path: Path, before: Node)], now: Int64, batch: inout Batch) {
        batch.undo.wrote(replacing: kept)
        changeLog.record(rev: rev, kept: kept)
        recheckDataDependentGrants(now: now, batch: &batch)
    }
}

extension WriteKind {
    /// The op's name, for `permission_denied` messages.
    var operationName: String {
        switch self {
        case .set: return "set"
        case .update: return "update"
        case .remove: return "remove"
        case .setPriority: return "setPriority"
        case .transaction: return "transaction"
        }
    }
}

extension Write {
    /// The path the request named (for `setPriority`, the node whose priority it sets).
    func requestPath(_ kind: WriteKind) -> Path {
        switch self {
        case .set(let path, _): return kind == .setPriority ? path.withoutPriority : path
        case .transaction(let path, _, _, _), .update(let path, _): return path
        case .overwrites(let entries): return entries.first?.path ?? .root
        }
    }
}
