import HearthCore
import HearthProtocol
import NIOCore

/// `auth`, `unauth` and expiry (docs/security.md, "Identity"). Tokens are verified on the connection's I/O
/// thread; the engine only switches identities, in request order, and re-checks the
/// connection's subscriptions.
extension Engine {
    func changeIdentity(_ step: AuthStep, of session: SessionLink, now: Int64, batch: inout Batch) -> ResponseBody {
        let identity: AuthContext?
        var warning: String?
        switch step {
        case .verified(let verified):
            identity = verified
        case .signOut:
            identity = nil
        case .refused(let error):
            // In open mode credentials are accepted and ignored, so tools that always send one work.
            guard rules == nil, error.code == .invalidToken else { return .failure(error) }
            identity = nil
            warning = "the server is open (no rules): the token was not verified and every request is allowed"
        case .token:
            return .failure(DatabaseError(.internal, "the token was not verified before reaching the engine"))
        case .peer:
            var state = sessions[session.id] ?? SessionState(link: session)
            state.isPeer = true
            sessions[session.id] = state
            return .authenticated(nil, warning: nil)
        }
        var state = sessions[session.id] ?? SessionState(link: session)
        state.identity = identity
        state.generation += 1
        let generation = state.generation
        sessions[session.id] = state
        if let expiresAt = identity?.expiresAt {
            scheduleExpiry(of: session.id, generation: generation, at: expiresAt, now: now)
        }
        recheckGrants(of: session.id, now: now, batch: &batch)
        return .authenticated(identity, warning: warning)
    }

    /// Submits an expiry when the identity's time is up (the engine decides, in order, whether
    /// it is still the identity in force).
    private func scheduleExpiry(of session: UInt64, generation: UInt64, at expiresAt: Int64, now: Int64) {
        let delay = TimeAmount.milliseconds(max(0, expiresAt - now) + 1)
        loop.scheduleTask(in: delay) { [self] in
            submit(.identityExpired(sessionID: session, generation: generation))
        }
    }

    func expireIdentity(_ session: UInt64, generation: UInt64, now: Int64, batch: inout Batch) {
        guard var state = sessions[session], state.generation == generation, state.identity != nil else { return }
        if let expiresAt = state.identity?.expiresAt, expiresAt > now {
            // The timer fired early (clock adjustment): try again at the real time.
            scheduleExpiry(of: session, generation: generation, at: expiresAt, now: now)
            return
        }
        state.identity = nil
        state.generation += 1
        sessions[session] = state
        batch.append(.authRevoked(reason: "expired"), for: state.link)
        recheckGrants(of: session, now: now, batch: &batch)
    }
}
