/// The election's decisions (docs/cluster.md, "Election and fencing") as pure functions of what a node knows: its own
/// position and the live members' keys. `ClusterCoordinator` acts on them.
enum ElectionRules {
    /// Whether log position `a` is later than `b`: by `lastEpoch`, then by `rev`.
    static func isLater(_ a: (lastEpoch: UInt64, rev: UInt64), than b: (lastEpoch: UInt64, rev: UInt64)) -> Bool {
        a.lastEpoch != b.lastEpoch ? a.lastEpoch > b.lastEpoch : a.rev > b.rev
    }

    /// The rev a node needs to lead under `syncReplicas ≥ 1`: the highest `confirmedRev` it saw
    /// from a leader, or that a live member key (the old leader's) still carries.
    static func requiredRev(own: NodePosition, members: [MemberInfo]) -> UInt64 {
        max(own.confirmedRevSeen, members.compactMap(\.confirmedRev).max() ?? 0)
    }

    /// Whether `node` may campaign: no other live member (but `excluding`, a resigning leader) holds
    /// a later `(lastEpoch, rev)`, and under `syncReplicas ≥ 1` its rev reaches `requiredRev`.
    static func isEligible(
        node: String, own: NodePosition, members: [MemberInfo], syncReplicas: Int, excluding: String? = nil
    ) -> Bool {
        let mine = (lastEpoch: own.lastEpoch, rev: own.rev)
        for member in members where member.node != node && member.node != excluding {
            if isLater((member.lastEpoch, member.rev), than: mine) { return false }
        }
        if syncReplicas >= 1 && own.rev < requiredRev(own: own, members: members) { return false }
        return true
    }

    /// Under `syncReplicas ≥ 1`, whether no live member (this node included, at `own`) can lead
    /// without losing an acknowledged write: the latest position falls short of `requiredRev`.
    static func noMemberEligible(
        node: String, own: NodePosition, members: [MemberInfo], syncReplicas: Int, excluding: String? = nil
    ) -> Bool {
        guard syncReplicas >= 1 else { return false }
        var best = (lastEpoch: own.lastEpoch, rev: own.rev)
        for member in members where member.node != node && member.node != excluding {
            if isLater((member.lastEpoch, member.rev), than: best) { best = (member.lastEpoch, member.rev) }
        }
        return best.rev < requiredRev(own: own, members: members)
    }

    /// The candidate `node` should let win, if any: another member campaigning from the same
    /// position with a lower name (ties go to the lower node name), or from a later position.
    static func deferTo(node: String, own: NodePosition, members: [MemberInfo]) -> String? {
        let mine = (lastEpoch: own.lastEpoch, rev: own.rev)
        for member in members.sorted(by: { $0.node < $1.node })
        where member.node != node && member.state == .candidate {
            let theirs = (lastEpoch: member.lastEpoch, rev: member.rev)
            if isLater(theirs, than: mine) { return member.node }
            if !isLater(mine, than: theirs) && member.node < node { return member.node }
        }
        return nil
    }

    /// Whether a node that just registered is in a cold start of the whole cluster: no leader
    /// key, and no other member leading or streaming. It then waits `leaseSeconds` before it
    /// campaigns, so that its peers can register too.
    static func isColdStart(node: String, leaderPresent: Bool, members: [MemberInfo]) -> Bool {
        guard !leaderPresent else { return false }
        return !members.contains { $0.node != node && ($0.state == .leader || $0.state == .streaming) }
    }
}
