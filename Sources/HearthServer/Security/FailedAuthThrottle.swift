import NIOConcurrencyHelpers

/// Failed `auth` attempts per remote address and minute: past the limit, further attempts from
/// that address are refused with `overloaded` until the minute ends, which makes guessing an
/// admin secret impractical. Credentials that cannot be guessed still pass
/// (`SecurityState.authenticate`, docs/security.md).
final class FailedAuthThrottle: Sendable {
    private struct Entry {
        var minute: Int64
        var failures: Int
    }

    private let perMinute: Int
    private let entries = NIOLockedValueBox<[String: Entry]>([:])

    init(perMinute: Int) { self.perMinute = perMinute }

    /// nil when `address` may try now; otherwise the milliseconds until it may.
    func retryAfter(for address: String, now: Int64) -> Int? {
        let minute = now / 60_000
        return entries.withLockedValue { entries in
            guard let entry = entries[address], entry.minute == minute, entry.failures >= perMinute else { return nil }
            return Int((minute + 1) * 60_000 - now)
        }
    }

    func recordFailure(from address: String, now: Int64) {
        let minute = now / 60_000
        entries.withLockedValue { entries in
            if entries.count > 100_000 { entries = entries.filter { $0.value.minute == minute } }
            var entry = entries[address] ?? Entry(minute: minute, failures: 0)
            if entry.minute != minute { entry = Entry(minute: minute, failures: 0) }
            entry.failures += 1
            entries[address] = entry
        }
    }
}
