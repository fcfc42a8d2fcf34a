import NIOConcurrencyHelpers
import NIOCore

/// A token bucket per remote address for the writes of all its connections, over both
/// protocols: `rate` a second sustained, bursts of twice that (`maxWritesPerSecondPerAddress`,
/// docs/security.md). It stops a client that opens a connection per write from stepping around
/// `maxWritesPerSecondPerConnection`.
///
/// Shared by every I/O thread. The buckets are split over a few locks by address, so that
/// connections from different addresses rarely wait for each other. Each part holds at most
/// `maxAddresses / parts` buckets: when it is full, the buckets that have refilled (their
/// address wrote nothing for a while) are dropped, and if that is not enough, the least recently
/// used half; a dropped address starts again with a full bucket.
final class AddressWriteLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var last: NIODeadline
    }

    private let rate: Double
    private let capacity: Double
    private let partCapacity: Int
    private let parts: [NIOLockedValueBox<[String: Bucket]>]

    /// nil when `rate` is 0 (no limit).
    init?(rate: Int, maxAddresses: Int = 100_000, parts: Int = 16) {
        guard rate > 0 else { return nil }
        self.rate = Double(rate)
        self.capacity = Double(rate) * 2
        self.partCapacity = max(2, maxAddresses / max(1, parts))
        self.parts = (0..<max(1, parts)).map { _ in NIOLockedValueBox([:]) }
    }

    /// Takes one token for `address`: nil when the write may go ahead, else how many ms until it may.
    func take(_ address: String, now: NIODeadline = .now()) -> Int? {
        let part = parts[Int(UInt(bitPattern: address.hashValue) % UInt(parts.count))]
        return part.withLockedValue { buckets in
            var bucket: Bucket
            if let existing = buckets[address] {
                bucket = existing
                let elapsed = Double((now - bucket.last).nanoseconds) / 1e9
                bucket.tokens = min(capacity, bucket.tokens + max(0, elapsed) * rate)
            } else {
                if buckets.count >= partCapacity { prune(&buckets, now: now) }
                bucket = Bucket(tokens: capacity, last: now)
            }
            bucket.last = now
            guard bucket.tokens >= 1 else {
                buckets[address] = bucket
                return Int(((1 - bucket.tokens) / rate * 1000).rounded(.up))
            }
            bucket.tokens -= 1
            buckets[address] = bucket
            return nil
        }
    }

    /// Gives back the token of a write that another limit refused after this one let it pass.
    func giveBack(_ address: String) {
        let part = parts[Int(UInt(bitPattern: address.hashValue) % UInt(parts.count))]
        part.withLockedValue { buckets in
            guard var bucket = buckets[address] else { return }
            bucket.tokens = min(capacity, bucket.tokens + 1)
            buckets[address] = bucket
        }
    }

    /// Addresses in the limiter (tests).
    var count: Int { parts.reduce(0) { sum, part in sum + part.withLockedValue { $0.count } } }

    /// Drops the buckets that would be full by now, then, while more than half the part's
    /// capacity remains, the least recently used.
    private func prune(_ buckets: inout [String: Bucket], now: NIODeadline) {
        buckets = buckets.filter { _, bucket in
            let elapsed = Double((now - bucket.last).nanoseconds) / 1e9
            return bucket.tokens + elapsed * rate < capacity
        }
        let keep = partCapacity / 2
        guard buckets.count > keep else { return }
        let recent = buckets.sorted { $0.value.last > $1.value.last }.prefix(keep)
        buckets = Dictionary(uniqueKeysWithValues: recent.map { ($0.key, $0.value) })
    }
}

/// The write limits of one connection, checked together at each write: its own
/// (`maxWritesPerSecondPerConnection`) and its remote address's (`maxWritesPerSecondPerAddress`;
/// none for loopback unless `limitLoopback`). Confined to the connection's event loop.
struct WriteLimits {
    /// Which limit refused a write, and how many ms until a write may pass it.
    enum Refusal {
        case connection(retryAfterMs: Int)
        case address(retryAfterMs: Int)

        var retryAfterMs: Int {
            switch self {
            case .connection(let ms), .address(let ms): return ms
            }
        }
    }

    private var connection: WriteRateLimiter?
    private let addressLimiter: AddressWriteLimiter?
    private let address: String

    /// nil when neither limit applies.
    init?(security: SecurityState, address: String, isLoopback: Bool) {
        connection = WriteRateLimiter(rate: security.limits.maxWritesPerSecondPerConnection)
        addressLimiter = isLoopback && !security.limits.limitLoopback ? nil : security.addressWrites
        self.address = address
        if connection == nil && addressLimiter == nil { return nil }
    }

    /// Takes one write from both limits: nil when the write may go ahead, else the refusal (and
    /// then neither limit counts it).
    mutating func take(now: NIODeadline = .now()) -> Refusal? {
        if let wait = connection?.take(now: now) { return .connection(retryAfterMs: wait) }
        if let wait = addressLimiter?.take(address, now: now) {
            connection?.giveBack()
            return .address(retryAfterMs: wait)
        }
        return nil
    }
}
