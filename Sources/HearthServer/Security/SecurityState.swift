import HearthAuth
import HearthCore
import HearthEngine
import Logging
import NIOConcurrencyHelpers

/// Security state shared by the I/O threads and the engine: the token verifier (replaced on
/// SIGHUP), whether the server is open, the limits and their bookkeeping, and the counters.
final class SecurityState: Sendable {
    let limits: ProtectionLimits
    /// What the engine shares: the open flag, the counters and the notice log.
    let access: AccessState
    var counters: SecurityCounters { access.counters }
    var noticeLog: RateLimitedLog { access.noticeLog }
    let failedAuth: FailedAuthThrottle
    let connections = ConnectionCounter()
    /// What the server holds for all its clients together (`maxBufferedBytes`).
    let buffers: BufferBudget
    /// `maxWritesPerSecondPerAddress`; nil when off.
    let addressWrites: AddressWriteLimiter?
    /// Sent in every `hello` when the server runs open on a reachable address.
    let helloWarning: String?
    private let verifierBox: NIOLockedValueBox<TokenVerifier>
    /// The secret cluster peers authenticate with (docs/cluster.md, "Settings"); nil: none.
    private let clusterSecret: [UInt8]?

    init(
        limits: ProtectionLimits, verifier: TokenVerifier, open: Bool, helloWarning: String?,
        clusterSecret: String? = nil
    ) {
        self.limits = limits
        self.buffers = BufferBudget(limit: limits.maxBufferedBytes)
        self.clusterSecret = clusterSecret.map { Array($0.utf8) }
        self.failedAuth = FailedAuthThrottle(perMinute: limits.maxFailedAuthPerMinute)
        self.addressWrites = AddressWriteLimiter(rate: limits.maxWritesPerSecondPerAddress)
        self.helloWarning = helloWarning
        verifierBox = NIOLockedValueBox(verifier)
        access = AccessState(open: open)
    }

    var verifier: TokenVerifier { verifierBox.withLockedValue { $0 } }

    /// A verifier built anew (SIGHUP); the keys fetched from `jwtPublicKeysURL` stay.
    func replaceVerifier(_ verifier: TokenVerifier) {
        verifierBox.withLockedValue { $0 = verifier.keepingFetchedKeys(of: $0) }
    }

    /// Keys fetched from `jwtPublicKeysURL` in place of the previous ones.
    func replaceFetchedKeys(_ keys: FetchedKeys, onUnknownKid: @escaping @Sendable () -> Void) {
        verifierBox.withLockedValue { $0 = $0.replacingFetchedKeys(keys, onUnknownKid: onUnknownKid) }
    }

    /// Keeps the keys of `jwtPublicKeysURL` fresh; nil when none is configured.
    let keyRefresher = NIOLockedValueBox<JWKSRefresher?>(nil)

    /// No rules: every connection may do everything.
    var isOpen: Bool { access.isOpen }

    func setOpen(_ open: Bool) { access.setOpen(open) }

    /// Whether `token` is one of `secrets`, compared in constant time.
    static func isOneOf(_ secrets: [String], _ token: String) -> Bool {
        guard !secrets.isEmpty else { return false }
        let bytes = Array(token.utf8)
        var found = false
        for secret in secrets where ConstantTime.equals(bytes, Array(secret.utf8)) { found = true }
        return found
    }

    /// Whether `token` is the cluster secret (compared in constant time).
    func isClusterSecret(_ token: String) -> Bool {
        guard let clusterSecret else { return false }
        return ConstantTime.equals(Array(token.utf8), clusterSecret)
    }
}

extension SecurityState {
    /// The answer to a write over `maxWritesPerSecondPerConnection` or
    /// `maxWritesPerSecondPerAddress` (either protocol): nothing was applied; retry after
    /// `retryAfterMs`.
    func writeRateExceeded(_ refusal: WriteLimits.Refusal) -> DatabaseError {
        counters.limitHits.add(1)
        let message: String
        switch refusal {
        case .connection:
            message =
                "this connection writes faster than \(limits.maxWritesPerSecondPerConnection) a second (maxWritesPerSecondPerConnection); nothing was applied"
        case .address:
            message =
                "this address writes faster than \(limits.maxWritesPerSecondPerAddress) a second (maxWritesPerSecondPerAddress); nothing was applied"
        }
        return DatabaseError(.overloaded, message, retryAfterMs: refusal.retryAfterMs)
    }

    /// Verifies a token presented by a client at `address` (a line protocol `auth`, or an HTTP
    /// request's credential). A failure is counted, throttled and logged unless the server is
    /// open (where credentials are accepted and ignored). While the address is throttled for
    /// failed attempts, only a credential that cannot be guessed (`verifyUnguessable`: a JWT, or
    /// a long admin secret) is verified and accepted; anything else is refused with
    /// `overloaded`, so one guesser behind a shared address does not lock out everyone else
    /// there (docs/security.md).
    /// `databaseSecrets`: the admin secrets of the database the request addresses
    /// (`databases.<name>.adminSecrets`), which make it admin of that database only.
    func authenticate(
        _ token: String, from address: String, now: Int64, logger: Logger, databaseSecrets: [String] = []
    ) -> Result<AuthContext, DatabaseError> {
        if Self.isOneOf(databaseSecrets, token) { return .success(.admin) }
        if let wait = failedAuth.retryAfter(for: address, now: now) {
            if case .success(let identity) = verifier.verifyUnguessable(token, now: now) { return .success(identity) }
            counters.limitHits.add(1)
            noticeLog.notice(logger, "auth throttled", metadata: ["peer": "\(address)"])
            return .failure(
                DatabaseError(
                    .overloaded, "too many failed auth attempts from this address; try again later",
                    retryAfterMs: wait))
        }
        let result = verifier.verify(token, now: now)
        if case .failure(let error) = result, !isOpen {
            failedAuth.recordFailure(from: address, now: now)
            counters.failedAuths.add(1)
            noticeLog.notice(logger, "auth failed", metadata: ["peer": "\(address)", "reason": "\(error.message)"])
        }
        return result
    }
}
