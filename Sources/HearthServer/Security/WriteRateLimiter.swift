import NIOCore

/// A token bucket for one connection's writes: `rate` a second sustained, bursts of twice that
/// (docs/security.md). Confined to the connection's event loop.
struct WriteRateLimiter {
    private let rate: Double
    private let capacity: Double
    private var tokens: Double
    private var last: NIODeadline

    /// nil when `rate` is 0 (no limit).
    init?(rate: Int, now: NIODeadline = .now()) {
        guard rate > 0 else { return nil }
        self.rate = Double(rate)
        self.capacity = Double(rate) * 2
        self.tokens = capacity
        self.last = now
    }

    /// Takes one token: nil when the write may go ahead, else how many ms until it may.
    mutating func take(now: NIODeadline = .now()) -> Int? {
        let elapsed = Double((now - last).nanoseconds) / 1e9
        last = now
        tokens = min(capacity, tokens + elapsed * rate)
        guard tokens >= 1 else { return Int(((1 - tokens) / rate * 1000).rounded(.up)) }
        tokens -= 1
        return nil
    }

    /// Gives back the token of a write that another limit refused after this one let it pass.
    mutating func giveBack() { tokens = min(capacity, tokens + 1) }
}
