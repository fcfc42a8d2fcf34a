import HearthCore
import HearthProtocol

/// What the engine keeps about one connection: who it is, and what each of its subscriptions
/// needs for its read check to be repeated (docs/security.md, "Where the rules are checked").
struct SessionState {
    var link: SessionLink
    /// nil: unauthenticated.
    var identity: AuthContext?
    /// Bumped at every identity change, so that an expiry timer of an older identity does nothing.
    var generation: UInt64 = 0
    /// sub → its read grant.
    var grants: [Int: ReadGrant] = [:]
    /// Authenticated with the cluster secret: a peer node (replication, forwarding).
    var isPeer = false

    init(link: SessionLink) { self.link = link }

    var subscriptionCount: Int { grants.count }
}

/// What a subscription's read check needs: its location and its query as the rules see it.
struct ReadGrant {
    let path: Path
    let query: RuleQuery?
}

/// One subscription of one connection.
struct SubscriptionID: Hashable {
    let session: UInt64
    let sub: Int
}
