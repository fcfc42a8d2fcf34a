import HearthCluster
import HearthJSON

/// The `members` array of `clusterStatus` (docs/PROTOCOL.md): each member's key as the coordinator
/// last saw it (`MemberInfo.json`), followed by how far the member is behind.
enum MemberStatus {
    /// One entry per member, in the coordinator's order.
    ///
    /// A member is `lagRevs` revisions behind the rev the leader last published. On the leader
    /// (`streams` non-empty), a member that streams from it shows its lag as the leader sees it
    /// instead: the revisions it has not acknowledged (`lagRevs`) and for how long the oldest of
    /// them has waited (`lagMs`). `rev` is this node's last rev; `now` in ms.
    static func entries(
        _ members: [MemberInfo], streams: some Collection<ReplicaStream>, rev: UInt64, now: Int64
    ) -> [JSONValue] {
        let leaderRev = members.first { $0.role == .leader }?.rev
        return members.map { member in
            entry(member, leaderRev: leaderRev, stream: streams.first { $0.node == member.node }, rev: rev, now: now)
        }
    }

    /// `member`'s entry: its key's fields, then `lagRevs` (and `lagMs` when `stream` is the
    /// member's stream from this leader).
    static func entry(
        _ member: MemberInfo, leaderRev: UInt64?, stream: ReplicaStream?, rev: UInt64, now: Int64
    ) -> JSONValue {
        guard case .object(var fields) = member.json else { return member.json }
        if let stream {
            let behind = rev - min(rev, stream.ackedRev)
            fields.append(JSONMember("lagRevs", .int(Int64(clamping: behind))))
            fields.append(JSONMember("lagMs", .int(behind == 0 ? 0 : max(0, now - stream.ackedAt))))
        } else if let leaderRev {
            fields.append(JSONMember("lagRevs", .int(Int64(clamping: leaderRev - min(leaderRev, member.rev)))))
        }
        return .object(fields)
    }
}
