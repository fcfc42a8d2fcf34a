import HearthJSON
import Logging

extension ClusterCoordinator {
    // MARK: - Keep-alives

    /// Keeps the lease alive every `leaseSeconds / 3`, recording when each successful keep-alive
    /// was sent (the proof of leadership counts from then).
    func keepAliveLoop() async {
        let period = Duration.milliseconds(settings.leaseSeconds * 1_000 / 3)
        while !Task.isCancelled {
            try? await Task.sleep(for: period)
            guard let lease = state.withLock({ $0.keepAlivesPaused || $0.leaseLost ? nil : $0.lease }) else { continue }
            let sent = clock.now
            do {
                let ttl = try await store.keepAlive(lease)
                reachable()
                let lost = state.withLock { state -> Bool in
                    guard state.lease == lease else { return false }
                    if ttl == nil {
                        state.leaseLost = true
                        return true
                    }
                    state.lastKeepAliveSent = sent
                    return false
                }
                if lost { logger.warning("cluster: this node's etcd lease expired", metadata: ["lease": "\(lease)"]) }
            } catch {
                unreachable(error, doing: "keeping the lease alive")
            }
        }
    }

    // MARK: - Watch

    /// Reads the cluster's keys, then watches them from the next revision; after any failure it
    /// reads them again.
    func watchLoop() async {
        while !Task.isCancelled {
            do {
                let (revision, kvs) = try await store.getPrefix(keys.prefix)
                reachable()
                applySnapshot(kvs)
                for try await event in store.watchPrefix(keys.prefix, fromRevision: revision + 1) {
                    apply(event)
                }
            } catch {
                if Task.isCancelled { break }
                unreachable(error, doing: "watching the cluster's keys")
            }
            state.withLock { $0.synced = false }
            try? await Task.sleep(for: Self.tick * 2)
        }
    }

    private func applySnapshot(_ kvs: [KeyValue]) {
        let steppedDown = state.withLock { state -> String? in
            state.members = [:]
            state.failover = nil
            var leaderKV: KeyValue?
            for kv in kvs {
                if kv.key == keys.leader {
                    leaderKV = kv
                } else {
                    apply(put: kv, &state)
                }
            }
            let result = applyLeader(leaderKV, &state)
            state.synced = true
            return result
        }
        afterChange(steppedDown: steppedDown)
    }

    private func apply(_ event: WatchEvent) {
        let steppedDown = state.withLock { state -> String? in
            switch event {
            case .put(let kv) where kv.key == keys.leader:
                return applyLeader(kv, &state)
            case .put(let kv):
                apply(put: kv, &state)
            case .delete(let key, _) where key == keys.leader:
                return applyLeader(nil, &state)
            case .delete(let key, _) where key == keys.failover:
                state.failover = nil
            case .delete(let key, _):
                if let node = keys.memberNode(key) {
                    state.members[node] = nil
                    if node == settings.node { state.registered = false }
                }
            }
            return nil
        }
        afterChange(steppedDown: steppedDown)
    }

    private func apply(put kv: KeyValue, _ state: inout CoordinatorState) {
        let json = try? JSONParser.parse(kv.value)
        if kv.key == keys.failover {
            state.failover = json.flatMap(FailoverNotice.init(json:))
            if let notice = state.failover, !notice.allowsCampaign(by: settings.node), state.candidateSince != nil {
                state.candidateSince = nil
                state.memberDirty = true
            }
        } else if let node = keys.memberNode(kv.key) {
            if let info = json.flatMap(MemberInfo.init(json:)), info.node == node {
                state.members[node] = info
            } else {
                logger.warning("cluster: ignoring a member key that is not one", metadata: ["key": "\(kv.key)"])
            }
        }
    }

    /// Takes in the leader key (nil: deleted). Returns why this node stopped leading, if it did.
    private func applyLeader(_ kv: KeyValue?, _ state: inout CoordinatorState) -> String? {
        guard let kv else {
            state.leader = nil
            state.leaderCreateRevision = 0
            return state.holdsLeadership ? "the leader key was deleted" : nil
        }
        if kv.createRevision != state.leaderCreateRevision {
            state.leaderCreateRevision = kv.createRevision
            state.epoch = UInt64(clamping: kv.createRevision)
            state.electionsSeen += 1
        }
        state.leader = (try? JSONParser.parse(kv.value)).flatMap(LeaderInfo.init(json:))
        // Someone leads: a campaign is over at once, not at the next tick.
        if state.candidateSince != nil {
            state.candidateSince = nil
            state.memberDirty = true
        }
        if state.holdsLeadership && kv.createRevision != state.ownEpoch {
            return "another leader holds the leader key"
        }
        return nil
    }

    private func afterChange(steppedDown reason: String?) {
        if let reason { stepDown(reason) }
        changed.yield()
    }

    /// Stops leading at once, and gives up the lease: the control loop revokes it (deleting the
    /// leader key if it still exists) and registers again under a new one, as a replica.
    func stepDown(_ reason: String) {
        let epoch = state.withLock { state -> Int64? in
            guard state.holdsLeadership else { return nil }
            state.holdsLeadership = false
            state.candidateSince = nil
            state.leaseLost = true
            state.memberDirty = true
            return state.ownEpoch
        }
        guard let epoch else { return }
        logger.info("cluster: no longer the leader", metadata: ["epoch": "\(epoch)", "reason": "\(reason)"])
        changed.yield()
    }

    // MARK: - Control loop

    /// Every tick: the proof of leadership, the lease, the member key, the election.
    func controlLoop() async {
        while !Task.isCancelled {
            await controlStep()
            try? await Task.sleep(for: Self.tick)
        }
    }

    private func controlStep() async {
        let now = clock.now
        let proofExpired = state.withLock { $0.holdsLeadership && !proofHolds($0, now: now) }
        if proofExpired { stepDown("proof of leadership expired (no keep-alive acknowledged in time)") }
        if state.withLock({ $0.leaseLost || $0.lease == nil }) {
            guard await renewLease() else { return }
        }
        do {
            try await writeMember(force: false)
        } catch {
            noteFailure(error, doing: "writing this node's member key")
            return
        }
        await electionStep()
    }

    /// Revokes the lost lease (best effort) and grants a new one; true when this node holds a
    /// lease again.
    private func renewLease() async -> Bool {
        if let old = state.withLock({ $0.lease }) {
            try? await store.revoke(old)
        }
        let sent = clock.now
        do {
            let lease = try await store.grantLease(ttlSeconds: settings.leaseSeconds)
            reachable()
            state.withLock { state in
                state.lease = lease
                state.leaseLost = false
                state.lastKeepAliveSent = sent
                state.registered = false
                state.memberDirty = true
            }
            logger.info("cluster: granted a new lease; registering again as a replica", metadata: ["lease": "\(lease)"])
            return true
        } catch {
            unreachable(error, doing: "granting a new lease")
            return false
        }
    }

    /// Writes `members/<node>` when it is not registered, its state or role changed (`force` too),
    /// or its position changed and the last write is a second old.
    func writeMember(force: Bool) async throws {
        let now = clock.now
        let snapshot = state.withLock { state -> (LeaseID, MemberInfo, Bool)? in
            guard let lease = state.lease, !state.leaseLost else { return nil }
            let info = MemberInfo(
                node: settings.node, tcp: settings.advertise, http: settings.advertiseHTTP, role: role(state),
                epoch: state.epoch, rev: 0, lastEpoch: 0, state: publishedState(state), confirmedRev: state.confirmedRev
            )
            let urgent = force || !state.registered || state.memberDirty
            let due = state.lastMemberWrite.map { now - $0 >= Self.memberRefresh } ?? true
            return urgent || due ? (lease, info, urgent) : nil
        }
        guard let (lease, snapshotInfo, urgent) = snapshot else { return }
        var info = snapshotInfo
        let own = position()
        info.rev = own.rev
        info.lastEpoch = own.lastEpoch
        let value = info.json.serialized
        let unchanged = state.withLock { $0.lastMemberValue == value }
        if unchanged && !urgent { return }
        state.withLock { $0.memberDirty = false }
        do {
            try await store.put(key: keys.member(settings.node), value: value, lease: lease)
        } catch {
            state.withLock { $0.memberDirty = true }
            throw error
        }
        reachable()
        let first = state.withLock { state -> Bool in
            state.lastMemberWrite = now
            state.lastMemberValue = value
            defer { state.registered = true }
            if !state.registered { state.coldStartCheckPending = true }
            return !state.registered
        }
        if first { logger.debug("cluster: member key written", metadata: ["lease": "\(lease)"]) }
    }

    // MARK: - Election

    private func electionStep() async {
        let now = clock.now
        let own = position()
        var announce: String?
        let action = state.withLock { state -> ElectionAction in
            guard state.synced, state.registered, !state.stopped, let lease = state.lease, !state.leaseLost else {
                return .wait
            }
            if state.leader != nil || state.holdsLeadership {
                state.coldStartCheckPending = false
                state.coldStartUntil = nil
                state.noEligibleLeader = false
                if state.candidateSince != nil {
                    state.candidateSince = nil
                    state.memberDirty = true
                }
                return .wait
            }
            let others = state.members.values.filter { $0.node != settings.node }
            if state.coldStartCheckPending {
                state.coldStartCheckPending = false
                if ElectionRules.isColdStart(node: settings.node, leaderPresent: false, members: Array(others)) {
                    state.coldStartUntil = now + .seconds(settings.leaseSeconds)
                    announce = "cold start: no leader and no member streaming; waiting leaseSeconds for peers"
                }
            }
            if let failover = state.failover {
                guard failover.allowsCampaign(by: settings.node) else { return withdraw(&state) }
                // The switchover's target: the old leader checked it has every record.
                if failover.to == settings.node { return .lead(lease) }
            }
            if let until = state.coldStartUntil {
                if now < until { return .wait }
                state.coldStartUntil = nil
            }
            let eligible = ElectionRules.isEligible(
                node: settings.node, own: own, members: Array(others), syncReplicas: settings.syncReplicas,
                excluding: state.failover?.from)
            guard eligible else {
                let none = ElectionRules.noMemberEligible(
                    node: settings.node, own: own, members: Array(others), syncReplicas: settings.syncReplicas,
                    excluding: state.failover?.from)
                if none && !state.noEligibleLeader {
                    announce =
                        "no member is eligible to lead without losing an acknowledged write; staying without a leader"
                }
                state.noEligibleLeader = none
                return withdraw(&state)
            }
            state.noEligibleLeader = false
            guard let since = state.candidateSince else {
                state.candidateSince = now
                state.memberDirty = true
                return .campaign
            }
            guard now - since >= .milliseconds(settings.leaseSeconds * 500) else { return .wait }
            if ElectionRules.deferTo(node: settings.node, own: own, members: Array(others)) != nil { return .wait }
            return .lead(lease)
        }
        if let announce { logger.warning("cluster: \(announce)", metadata: ["rev": "\(own.rev)"]) }
        switch action {
        case .wait:
            break
        case .campaign:
            logger.info(
                "cluster: campaigning for leadership", metadata: ["rev": "\(own.rev)", "lastEpoch": "\(own.lastEpoch)"])
            changed.yield()
        case .lead(let lease):
            await tryToLead(lease)
        }
        changed.yield()
    }

    /// Stops campaigning (a better candidate, a switchover to another node) and waits.
    private func withdraw(_ state: inout CoordinatorState) -> ElectionAction {
        if state.candidateSince != nil {
            state.candidateSince = nil
            state.memberDirty = true
        }
        return .wait
    }

    /// The leader transaction: create the leader key under this node's lease if it is absent.
    private func tryToLead(_ lease: LeaseID) async {
        let leader = LeaderInfo(node: settings.node, tcp: settings.advertise, http: settings.advertiseHTTP)
        do {
            let outcome = try await store.createIfAbsent(key: keys.leader, value: leader.json.serialized, lease: lease)
            reachable()
            switch outcome {
            case .created(let revision):
                let stopped = state.withLock { state -> Bool in
                    guard !state.stopped else { return true }
                    state.holdsLeadership = true
                    state.ownEpoch = revision
                    state.candidateSince = nil
                    state.memberDirty = true
                    state.leader = leader
                    if state.leaderCreateRevision != revision {
                        state.leaderCreateRevision = revision
                        state.epoch = UInt64(clamping: revision)
                        state.electionsSeen += 1
                    }
                    return false
                }
                if stopped {
                    // Stopping while the transaction ran: hand the key straight back.
                    _ = try? await store.compareAndDelete(key: keys.leader, createRevision: revision)
                    return
                }
                logger.info("cluster: this node is the leader", metadata: ["epoch": "\(revision)"])
            case .exists(let kv):
                state.withLock { state in
                    if state.candidateSince != nil {
                        state.candidateSince = nil
                        state.memberDirty = true
                    }
                    if kv.createRevision != state.leaderCreateRevision {
                        state.leaderCreateRevision = kv.createRevision
                        state.epoch = UInt64(clamping: kv.createRevision)
                        state.electionsSeen += 1
                    }
                    state.leader = (try? JSONParser.parse(kv.value)).flatMap(LeaderInfo.init(json:))
                }
                logger.info("cluster: another node won the election", metadata: ["epoch": "\(kv.createRevision)"])
            }
            changed.yield()
        } catch {
            noteFailure(error, doing: "campaigning for leadership")
        }
    }

    // MARK: - Failures

    /// A failed store call: a lost lease is taken in; anything else is logged as etcd trouble.
    private func noteFailure(_ error: any Error, doing what: String) {
        if case ClusterStoreError.leaseNotFound = error {
            state.withLock { $0.leaseLost = true }
            logger.warning("cluster: this node's etcd lease is gone", metadata: ["while": "\(what)"])
        } else {
            unreachable(error, doing: what)
        }
    }

    /// Logs etcd trouble as a warning: at once, then at most every 10 seconds while it lasts.
    func unreachable(_ error: any Error, doing what: String) {
        let now = clock.now
        let warn = state.withLock { state -> Bool in
            if state.stopped { return false }
            if state.unreachableSince == nil { state.unreachableSince = now }
            guard let last = state.lastUnreachableWarning, now - last < .seconds(10) else {
                state.lastUnreachableWarning = now
                return true
            }
            return false
        }
        if warn { logger.warning("cluster: etcd call failed", metadata: ["while": "\(what)", "error": "\(error)"]) }
    }

    /// Notes that etcd answered; logs the end of an outage.
    func reachable() {
        let since = state.withLock { state -> ContinuousClock.Instant? in
            defer {
                state.unreachableSince = nil
                state.lastUnreachableWarning = nil
            }
            return state.unreachableSince
        }
        if let since { logger.info("cluster: etcd is reachable again", metadata: ["after": "\(clock.now - since)"]) }
    }
}

/// What one election step decided.
private enum ElectionAction {
    case wait
    /// Become a candidate (published at once), then wait for a better one.
    case campaign
    /// Try the leader transaction under this lease.
    case lead(LeaseID)
}
