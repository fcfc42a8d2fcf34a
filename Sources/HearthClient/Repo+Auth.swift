internal import HearthJSON
import NIOCore

extension Repo {
    // MARK: Authenticating each connection (on the loop)

    /// Starts a new connection's session: authenticates with the current credential, then
    /// rebuilds the connection's state and sends what waited (`sessionReady`). The `auth` line
    /// goes first, so every request after it runs with the identity.
    func authenticate(on channel: any Channel) {
        security.channelFailure = nil
        switch security.credential {
        case .signedOut:
            sessionReady()
        case .token(let token):
            sendAuth(token)
            sessionReady()
        case .provider:
            guard configuration.tokenProvider != nil else {
                sessionReady()
                return
            }
            security.phase = .connecting
            fetchToken(for: channel) { token in
                if let token { self.sendAuth(token) }
                self.security.phase = .ready
                self.sessionReady()
            }
        }
    }

    /// Handles `{"event":"auth_revoked"}`: the connection is unauthenticated now. With a token
    /// provider, asks it for a fresh token and re-authenticates, holding requests meanwhile.
    func authRevoked(_ event: JSONValue) {
        logger.debug(
            "the server revoked the connection's identity",
            metadata: ["reason": "\(event["reason"]?.stringValue ?? "unknown")"])
        guard let channel, security.credential != .signedOut else { return }
        guard configuration.tokenProvider != nil else {
            // The token given to auth(token:) ended: presenting it again would fail.
            security.credential = .signedOut
            return
        }
        security.credential = .provider
        security.phase = .reauthenticating
        fetchToken(for: channel) { token in
            if let token { self.sendAuth(token) }
            self.security.phase = .ready
            let held = self.security.held
            self.security.held = []
            for out in held { self.write(out) }
            self.channel?.flush()
        }
    }

    /// Whether `out` must wait for an `auth` in the making instead of going out now; keeps it
    /// where it belongs (see `ConnectionSecurity.Phase`).
    func holdWhileAuthenticating(_ out: Outgoing) -> Bool {
        switch security.phase {
        case .ready:
            return false
        case .connecting:
            if out.kind == .request { queued.append(out) }
            return true
        case .reauthenticating:
            security.held.append(out)
            return true
        }
    }

    /// The connection ended: held user requests go back to the front of the offline queue (the
    /// repo puts the unanswered ones before them), a token still being fetched is dropped.
    func securitySessionEnded() {
        let held = security.held
        security.held = []
        queued.insert(contentsOf: held.filter { $0.kind == .request }, at: 0)
        security.phase = .ready
        security.generation += 1
    }

    /// Asks the token provider for a token off the loop, then runs `then` on the loop, unless
    /// the connection ended or a newer request superseded this one. A provider that throws
    /// counts as no token.
    private func fetchToken(for channel: any Channel, _ then: @escaping @Sendable (String?) -> Void) {
        guard let provider = configuration.tokenProvider else {
            then(nil)
            return
        }
        security.generation += 1
        let generation = security.generation
        Task {
            let token: String?
            do {
                token = try await provider()
            } catch {
                self.logger.debug(
                    "the token provider failed; going on unauthenticated", metadata: ["error": "\(error)"])
                token = nil
            }
            self.loop.execute {
                guard self.channel === channel, self.security.generation == generation else { return }
                then(token)
            }
        }
    }

    /// Writes `auth` ahead of everything not yet sent. A refusal is logged (never the token):
    /// the connection stays unauthenticated and the requests after it fail on the rules.
    private func sendAuth(_ token: String) {
        let out = Outgoing(
            kind: .session, body: [JSONMember("op", .string("auth")), JSONMember("token", .string(token))]
        ) {
            result in
            switch result {
            case .success(let response):
                let identity = AuthIdentity(wire: response["auth"] ?? .null)
                self.logger.debug(
                    "authenticated",
                    metadata: [
                        "uid": "\(identity?.uid ?? (identity?.isAdmin == true ? "admin" : "none"))",
                        "warning": "\(response["warning"]?.stringValue ?? "")",
                    ])
            case .failure(let error):
                self.logger.debug(
                    "auth refused; the connection stays unauthenticated",
                    metadata: ["code": "\(error.code.rawValue)", "message": "\(error.message)"])
            }
        }
        write(out)
        channel?.flush()
    }

    // MARK: Explicit auth and unauth (any thread)

    /// Sends `auth` in order with the other requests; on success the token is kept and
    /// presented on every new connection.
    func auth(token: String, _ completion: @escaping @Sendable (Result<AuthIdentity?, HearthError>) -> Void) {
        request([JSONMember("op", .string("auth")), JSONMember("token", .string(token))]) { result in
            completion(
                result.map { response in
                    self.security.credential = .token(token)
                    return AuthIdentity(wire: response["auth"] ?? .null)
                })
        }
    }

    /// Sends `unauth`; on success the client stays unauthenticated across reconnects (the token
    /// provider is not asked again) until the next `auth(token:)`.
    func unauth(_ completion: @escaping @Sendable (Result<Void, HearthError>) -> Void) {
        request([JSONMember("op", .string("unauth"))]) { result in
            completion(result.map { _ in self.security.credential = .signedOut })
        }
    }
}
