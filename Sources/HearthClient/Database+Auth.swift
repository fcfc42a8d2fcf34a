/// Authentication: who this client is to the server's rules.
extension Database {
    /// Authenticates the connection with `token` (a JWT, or one of the server's admin secrets)
    /// and keeps the token: the client presents it again on every reconnect, before any other
    /// request. Requests made after this call run with the new identity.
    ///
    /// Returns the identity the server gave the connection, or nil when the server runs without
    /// rules and ignored the token. Throws `HearthError` `invalid_token` (the message says why:
    /// expired, bad signature, …; the connection's identity is then unchanged) or `overloaded`
    /// (too many failed attempts from this address; see `retryAfterMs`).
    @discardableResult
    public func auth(token: String) async throws -> AuthIdentity? {
        try await withCheckedThrowingContinuation { continuation in
            repo.auth(token: token) { continuation.resume(with: $0) }
        }
    }

    /// As `auth(token:)`; `completion` runs on the callback queue with the error, or the
    /// identity (nil on a server without rules).
    public func auth(token: String, completion: (@Sendable ((any Error)?, AuthIdentity?) -> Void)?) {
        repo.auth(token: token) { result in
            guard let completion else { return }
            switch result {
            case .success(let identity): self.repo.callback { completion(nil, identity) }
            case .failure(let error): self.repo.callback { completion(error, nil) }
            }
        }
    }

    /// Returns the connection to unauthenticated. The client stays unauthenticated across
    /// reconnects (the `tokenProvider` is not asked again) until the next `auth(token:)`.
    /// Observers the rules no longer allow are cancelled.
    public func unauth() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            repo.unauth { continuation.resume(with: $0) }
        }
    }

    /// As `unauth()`; `completion` runs on the callback queue.
    public func unauth(completion: (@Sendable ((any Error)?) -> Void)?) {
        repo.unauth { result in
            guard let completion else { return }
            switch result {
            case .success: self.repo.callback { completion(nil) }
            case .failure(let error): self.repo.callback { completion(error) }
            }
        }
    }
}
