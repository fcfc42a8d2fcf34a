import Logging
import NIOConcurrencyHelpers

/// What the engine shares with the transports about access: whether the server is open (no
/// rules), which the engine changes when rules are set at run time and the transports read for
/// each request; the counts of what security turned away; and the rate-limited log of denials.
package final class AccessState: Sendable {
    package let counters = SecurityCounters()
    package let noticeLog = RateLimitedLog(linesPerSecond: 5)
    private let openBox: NIOLockedValueBox<Bool>

    package init(open: Bool) { openBox = NIOLockedValueBox(open) }

    /// No rules: every connection may do everything.
    package var isOpen: Bool { openBox.withLockedValue { $0 } }

    package func setOpen(_ open: Bool) { openBox.withLockedValue { $0 = open } }
}

/// Counts of what security turned away, for metrics and tests.
package final class SecurityCounters: Sendable {
    package init() {}

    package let denials = Counter()
    package let failedAuths = Counter()
    package let limitHits = Counter()

    package final class Counter: Sendable {
        private let value = NIOLockedValueBox(0)
        package func add(_ n: Int) { value.withLockedValue { $0 += n } }
        package var count: Int { value.withLockedValue { $0 } }
    }
}

/// Notice-level log lines of denials and limit hits, at most a few per second, so that an
/// attack cannot fill the disk; the lines dropped are counted in the next one that passes.
package final class RateLimitedLog: Sendable {
    private struct Window {
        var second: Int64 = 0
        var lines = 0
        var suppressed = 0
    }

    private let linesPerSecond: Int
    private let window = NIOLockedValueBox(Window())

    package init(linesPerSecond: Int) { self.linesPerSecond = linesPerSecond }

    package func notice(_ logger: Logger, _ message: Logger.Message, metadata: Logger.Metadata) {
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
