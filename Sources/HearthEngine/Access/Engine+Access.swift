import HearthCore
import HearthJSON
import HearthProtocol
import Logging

/// The one decision point (docs/security.md, "Where the rules are checked"): every read and write
/// of every protocol is checked here, inside the engine's turn, against the tree it reads or would
/// change. Admins and open mode pass without evaluating anything.
extension Engine {
    /// The rules that apply to `identity`, or nil when nothing is to be checked.
    func enforcedRules(for identity: AuthContext?) -> RuleSet? {
        guard let rules, identity?.isAdmin != true else { return nil }
        return rules
    }

    /// nil when `identity` may read `path` (with `query`); otherwise the `permission_denied` error.
    func readDenial(
        _ operation: String, at path: Path, query: RuleQuery?, identity: AuthContext?, now: Int64
    ) -> DatabaseError? {
        guard let rules = enforcedRules(for: identity) else { return nil }
        let verdict = rules.checkRead(path: path, query: query, auth: identity, root: database.root, now: now)
        return verdict.allowed ? nil : denied(operation, at: path, identity: identity)
    }

    /// nil when a write whose new tree is `after` may change `targets` (computed only when rules
    /// are enforced).
    func writeDenial(
        _ operation: String, at path: Path, targets: @autoclosure () -> [Path], before: Node, after: Node,
        identity: AuthContext?, now: Int64
    ) -> DatabaseError? {
        guard let rules = enforcedRules(for: identity) else { return nil }
        let verdict = rules.checkWrite(targets: targets(), before: before, after: after, auth: identity, now: now)
        return verdict.allowed ? nil : denied(operation, at: path, identity: identity)
    }

    /// What a checked write came to.
    enum CheckedWrite {
        case committed(rev: UInt64)
        case denied(DatabaseError)
        /// A transaction whose expectation failed: the current node.
        case stale(Node)
    }

    /// Applies `write` when the rules allow it. The write is applied to the persistent tree, the
    /// old and new roots (O(1) captures, server values resolved) are checked, and a denied write
    /// is undone before anything is logged or any event raised.
    /// A write that carried a write id (`tag`) is logged with it and, once applied, remembered.
    /// When nothing needs the old tree (`inPlaceSet`), it is applied in place.
    func applyChecked(
        _ write: Write, operation: String, at path: Path, identity: AuthContext?, now: Int64, tag: WriteTag? = nil,
        batch: inout Batch
    ) -> CheckedWrite {
        if enforcedRules(for: identity) == nil, let set = inPlaceSet(write),
            let applied = database.applyInPlace(settingNonEmpty: set.value, at: set.path, now: now)
        {
            var logged = applied.logged
            if let tag { remember(tag, of: &logged) }
            if logsWriteAuthors.load(ordering: .relaxed) { logged.author = WriteAuthor(time: now, identity: identity) }
            batch.record(logged)
            afterWrite(rev: logged.rev, kept: [applied.undoPoint], now: now, batch: &batch)
            return .committed(rev: logged.rev)
        }
        switch database.apply(write, now: now) {
        case .committed(var logged, let before):
            if let denial = writeDenial(
                operation, at: path, targets: write.paths, before: before, after: database.root, identity: identity,
                now: now)
            {
                database.restore(root: before, rev: logged.rev - 1)
                return .denied(denial)
            }
            if let tag { remember(tag, of: &logged) }
            if logsWriteAuthors.load(ordering: .relaxed) { logged.author = WriteAuthor(time: now, identity: identity) }
            batch.record(logged)
            afterWrite(write, before: before, rev: logged.rev, now: now, batch: &batch)
            return .committed(rev: logged.rev)
        case .stale(let current):
            return .stale(current)
        }
    }

    private func remember(_ tag: WriteTag, of logged: inout CommittedWrite) {
        logged.tag = tag
        writeIDs.remember(tag, rev: logged.rev, pushKey: logged.pushKey)
    }

    /// The whole tree as it would be after `write`, which is not applied; nil when it would not
    /// commit.
    func rootAfter(_ write: Write, now: Int64) -> Node? {
        var probe = database
        guard case .committed = probe.apply(write, now: now) else { return nil }
        return probe.root
    }

    /// A transaction whose expectation failed answers with the current value: that needs the
    /// write to be allowed first (docs/rules.md, "Checks by operation": a denied transaction is never a mismatch), and
    /// then the value to be readable.
    func staleTransactionDenial(_ write: Write, at path: Path, identity: AuthContext?, now: Int64) -> DatabaseError? {
        guard enforcedRules(for: identity) != nil else { return nil }
        if let after = rootAfter(write.unconditional(in: database.root), now: now),
            let denial = writeDenial(
                "transaction", at: path, targets: [path], before: database.root, after: after, identity: identity,
                now: now)
        {
            return denial
        }
        return readDenial("transaction", at: path, query: nil, identity: identity, now: now)
    }

    /// An onDisconnect registration is checked as the write it would make, now (docs/rules.md, "Checks by operation").
    func onDisconnectDenial(_ action: OnDisconnectAction, identity: AuthContext?, now: Int64) -> DatabaseError? {
        guard enforcedRules(for: identity) != nil else { return nil }
        let path: Path
        let write: Write
        do {
            guard let wouldBe = try action.write(limits: database.limits) else { return nil }
            (path, write) = wouldBe
        } catch {
            return error
        }
        guard let after = rootAfter(write, now: now) else { return nil }
        return writeDenial(
            "onDisconnect", at: path, targets: write.paths, before: database.root, after: after, identity: identity,
            now: now)
    }

    /// The onDisconnect operations of a closed connection that its identity may still perform,
    /// as one write. Each is checked against the data as the ones before it leave it; a denied one
    /// is logged and dropped, never retried.
    func permittedOnDisconnectWrite(_ queue: OnDisconnectQueue, session: UInt64, now: Int64) -> Write? {
        var probe = database
        var permitted: [(path: Path, value: PreparedValue)] = []
        for entry in queue.runs(limits: database.limits) {
            let write = Write.set(path: entry.path, value: entry.value)
            var next = probe
            guard case .committed = next.apply(write, now: now) else { continue }
            if let rules = enforcedRules(for: entry.auth) {
                let verdict = rules.checkWrite(
                    targets: write.paths, before: probe.root, after: next.root, auth: entry.auth, now: now)
                guard verdict.allowed else {
                    logDenial(
                        "onDisconnect (at disconnect)", at: entry.path, identity: entry.auth,
                        extra: ["connection": "\(session)"])
                    continue
                }
            }
            probe = next
            permitted.append((entry.path, entry.value))
        }
        return permitted.isEmpty ? nil : .overwrites(permitted)
    }

    func denied(_ operation: String, at path: Path, identity: AuthContext?) -> DatabaseError {
        logDenial(operation, at: path, identity: identity)
        return DatabaseError(.permissionDenied, "\(operation) denied at \(path)")
    }

    func adminOnly(_ operation: String) -> DatabaseError {
        DatabaseError(.permissionDenied, "\(operation) needs an admin connection (auth with an admin secret)")
    }

    func logDenial(_ operation: String, at path: Path, identity: AuthContext?, extra: Logger.Metadata = [:]) {
        access.counters.denials.add(1)
        access.noticeLog.notice(
            logger, "permission denied",
            metadata: extra.merging(
                ["op": "\(operation)", "path": "\(path)", "uid": "\(identity?.uid ?? "(unauthenticated)")"]
            ) { a, _ in a })
    }

    // MARK: Subscriptions

    /// Records the read grant of a new subscription.
    func grant(_ sub: Int, of session: SessionLink, path: Path, query: RuleQuery?) {
        sessions[session.id, default: SessionState(link: session)].grants[sub] = ReadGrant(path: path, query: query)
        if let rules, rules.readDependsOnData(at: path) {
            dataDependentGrants.insert(SubscriptionID(session: session.id, sub: sub))
        }
    }

    func revokeGrant(_ sub: Int, of session: UInt64) {
        sessions[session]?.grants[sub] = nil
        dataDependentGrants.remove(SubscriptionID(session: session, sub: sub))
    }

    /// Forgets a connection that went away: its identity and every read grant.
    func forgetSession(_ session: UInt64) {
        guard let grants = sessions.removeValue(forKey: session)?.grants else { return }
        for sub in grants.keys { dataDependentGrants.remove(SubscriptionID(session: session, sub: sub)) }
    }

    /// After a write: cancels every subscription whose `.read` looks at data and no longer holds.
    func recheckDataDependentGrants(now: Int64, batch: inout Batch) {
        guard !dataDependentGrants.isEmpty else { return }
        for id in dataDependentGrants { recheck(id.sub, of: id.session, now: now, batch: &batch) }
    }

    /// After an identity change: re-checks every subscription of the connection.
    func recheckGrants(of session: UInt64, now: Int64, batch: inout Batch) {
        for sub in sessions[session]?.grants.keys.sorted() ?? [] { recheck(sub, of: session, now: now, batch: &batch) }
    }

    /// Re-checks one subscription; when its read is no longer allowed, ends it with a `cancel`
    /// event (docs/PROTOCOL.md, "Events").
    func recheck(_ sub: Int, of session: UInt64, now: Int64, batch: inout Batch) {
        guard let state = sessions[session], let grant = state.grants[sub] else { return }
        guard let rules = enforcedRules(for: state.identity) else { return }
        let verdict = rules.checkRead(
            path: grant.path, query: grant.query, auth: state.identity, root: database.root, now: now)
        guard !verdict.allowed else { return }
        views.unsubscribe(session: session, sub: sub)
        revokeGrant(sub, of: session)
        let error = denied("subscription", at: grant.path, identity: state.identity)
        batch.append(.cancelled(sub: sub, error), for: state.link)
    }

    /// Re-checks every subscription of every connection (new rules).
    func recheckAllGrants(now: Int64, batch: inout Batch) {
        dataDependentGrants.removeAll()
        for session in sessions.keys.sorted() {
            for (sub, grant) in sessions[session]?.grants ?? [:] {
                if let rules, rules.readDependsOnData(at: grant.path) {
                    dataDependentGrants.insert(SubscriptionID(session: session, sub: sub))
                }
            }
            recheckGrants(of: session, now: now, batch: &batch)
        }
    }
}

extension Write {
    /// This write as it would commit whatever the data: a transaction's expectation replaced by
    /// the current node, so that the rules can judge the write it would make.
    func unconditional(in root: Node) -> Write {
        guard case .transaction(let path, let value, _, let valueHasPriority) = self else { return self }
        return .transaction(
            path: path, value: value, expectation: .value(root.child(at: path), comparePriorities: true),
            valueHasPriority: valueHasPriority)
    }
}

extension OnDisconnectAction {
    /// The write this registration would make, with the path a denial names; nil for `cancel`,
    /// which writes nothing.
    func write(limits: Limits) throws(DatabaseError) -> (path: Path, write: Write)? {
        switch self {
        case .cancel:
            return nil
        case .set(let path, let value):
            return (path, .set(path: path, value: try PreparedValue(value, at: path, limits: limits)))
        case .update(let base, let values):
            let prepared = try values.map { entry throws(DatabaseError) in
                (
                    path: entry.path,
                    value: try PreparedValue(entry.value, at: base.appending(entry.path), limits: limits)
                )
            }
            return (base, try Write.update(at: base, values: prepared))
        }
    }
}
