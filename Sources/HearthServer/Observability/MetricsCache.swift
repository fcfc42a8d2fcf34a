import NIOConcurrencyHelpers
import NIOCore

/// The rendered Prometheus text, kept for `interval`: however many scrapers ask, the metrics are
/// rendered at most once per interval, so polling `/.well-known/hearth/metrics` costs a copy of
/// the last text rather than a walk over every series. A caller that finds the text stale renders
/// it while holding the lock, so callers arriving meanwhile wait for that text instead of
/// rendering their own.
final class MetricsCache: Sendable {
    private struct Rendered {
        var bytes: [UInt8]
        var at: NIODeadline
    }

    private let interval: TimeAmount
    private let rendered = NIOLockedValueBox<Rendered?>(nil)

    init(interval: TimeAmount = .seconds(1)) { self.interval = interval }

    /// The text rendered within the interval, or `render()`'s new one.
    func bytes(now: NIODeadline = .now(), render: () -> [UInt8]) -> [UInt8] {
        rendered.withLockedValue { rendered in
            if let last = rendered, now - last.at < interval { return last.bytes }
            let bytes = render()
            rendered = Rendered(bytes: bytes, at: now)
            return bytes
        }
    }
}
