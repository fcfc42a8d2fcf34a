import HearthAuth
import HearthCore
import Logging
import NIOConcurrencyHelpers

/// Security state shared by the I/O threads and the engine: the token verifier (replaced on
/// SIGHUP), whether the server is open, the limits and their bookkeeping, and the counters.
final class SecurityState: Sendable {
    let limits: ProtectionLimits
    let counters = SecurityCounters()
    let noticeLog = RateLimitedLog(linesPerSecond: 5)
    let failedAuth: FailedAuthThrottle
    let connections = ConnectionCounter()
    /// What the server holds for all its clients together (`maxBufferedBytes`).
    let buffers: BufferBudget
    /// `maxWritesPerSecondPerAddress`; nil when off.
    let addressWrites: AddressWriteLimiter?
    /// Sent in every `hello` when the server runs open on a reachable address.
    let helloWarning: String?
    private let verifierBox: NIOLockedValueBox<TokenVerifier>
    private let openBox: NIOLockedValueBox<Bool>
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
        openBox = NIOLockedValueBox(open)
    }

    var verifier: TokenVerifier { verifierBox.withLockedValue { $0 } }

    func replaceVerifier(_ verifier: TokenVerifier) { verifierBox.withLockedValue { $0 = verifier } }

    /// No rules: every connection may do everything.
    var isOpen: Bool { openBox.withLockedValue { $0 } }

    func setOpen(_ open: Bool) { openBox.withLockedValue { $0 = open } }

    /// Whether `token` is the cluster secret (compared in constant time).
    func isClusterSecret(_ token: String) -> Bool {
        guard let clusterSecret else { return false }
        return ConstantTime.equals(Array(token.utf8), clusterSecret)
    }
}

/// Counts of what security turned away, for metrics and tests.
final class SecurityCounters: Sendable {
    let denials = Counter()
    let failedAuths = Counter()
    let limitHits = Counter()

    final class Counter: Sendable {
        private let value = NIOLockedValueBox(0)
        func add(_ n: Int) { value.withLockedValue { $0 += n } }
        var count: Int { value.withLockedValue { $0 } }
    }
}

/// Notice-level log lines of denials and limit hits, at most a few per second, so that an
/// attack cannot fill the disk; the lines dropped are counted in the next one that passes.
final class RateLimitedLog: Sendable {
    private struct Window {
        var second: Int64 = 0
        var lines = 0
        var suppressed = 0
    }

    private let linesPerSecond: Int
    private let window = NIOLockedValueBox(Window())

    init(linesPerSecond: Int) { self.linesPerSecond = linesPerSecond }

    func notice(_ logger: Logger, _ message: Logger.Message, metadata: Logger.Metadata) {
        let second = wallClockMilliseconds() / 1000
        let suppressed: Int? = window.withLockedValue { w in
            if w.second != second {
                w.second = second
                w.lines = 0
            }
            guard w.lines < linesPerSecond else {
                w.suppressed += 1
                return nil
            }
            w.lines += 1
            defer { w.suppressed = 0 }
            return w.suppressed
        }
        guard let suppressed else { return }
        var metadata = metadata
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.notice(message, metadata: metadata)
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
    func authenticate(
        _ token: String, from address: String, now: Int64, logger: Logger
    ) -> Result<AuthContext, DatabaseError> {
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
