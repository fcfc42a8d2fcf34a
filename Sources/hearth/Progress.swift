#if canImport(Glibc)
import Glibc
#endif

/// Progress of a long operation on stderr: a redrawn bar when stderr is a terminal, else a
/// plain line every few seconds, and a last line at the end. Each report gives the amount done
/// of the total, the rate and, once the rate is known, the time left.
final class Progress {
    /// What is counted: bytes (shown in KiB or MiB once large) or items such as children.
    enum Unit {
        case bytes
        case items(String)
    }

    private let label: String
    private let total: Int
    private let unit: Unit
    private let isTerminal = Progress.stderrIsTerminal
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private var lastReport: ContinuousClock.Instant
    private var done = 0
    private var finished = false
    /// What is being done now, shown after the figures (`replaying the log`).
    var step: String?

    static let stderrIsTerminal = isatty(2) == 1

    init(_ label: String, total: Int, unit: Unit) {
        self.label = label
        self.total = max(total, 0)
        self.unit = unit
        started = clock.now
        lastReport = started
    }

    /// Says what is about to happen, on a line of its own (`label: text`).
    static func say(_ label: String, _ text: String) {
        writeError("\(label): \(text)")
    }

    func advance(by count: Int) { update(done: done + count) }

    /// Says what is being done now (`step`), shown at the next report, which comes at once when
    /// the last one is old enough.
    func note(step text: String) {
        step = text
        update(done: done)
    }

    /// Sets the amount done so far (it never goes back).
    func update(done newValue: Int) {
        done = max(done, min(newValue, total))
        let now = clock.now
        let interval: Duration = isTerminal ? .milliseconds(100) : .seconds(2)
        // The last report is `finish()`'s.
        if done < total, now - lastReport >= interval {
            lastReport = now
            report(final: false)
        }
    }

    /// Reports the end: everything done.
    func finish() {
        guard !finished else { return }
        finished = true
        done = total
        report(final: true)
    }

    /// `12.3/26.0 MiB` or `9000/20001 children`.
    private func amounts() -> String {
        switch unit {
        case .bytes:
            let (divisor, name) = Self.byteUnit(scale: total)
            return "\(Self.scaled(done, divisor))/\(Self.scaled(total, divisor)) \(name)"
        case .items(let name): return "\(done)/\(total) \(name)"
        }
    }

    private func rate(perSecond value: Double) -> String {
        switch unit {
        case .bytes:
            let (divisor, name) = Self.byteUnit(scale: Int(value))
            return "\(Self.scaled(Int(value), divisor)) \(name)/s"
        case .items(let name): return "\(Int(value.rounded())) \(name)/s"
        }
    }

    private func report(final: Bool) {
        let fraction = total > 0 ? min(Double(done) / Double(total), 1) : 1
        let percent = Int((fraction * 100).rounded(.down))
        let elapsed = Self.seconds(clock.now - started)
        var details = [amounts()]
        if elapsed >= 0.5, done > 0 {
            let perSecond = Double(done) / elapsed
            details.append(rate(perSecond: perSecond))
            if final {
                details.append("in \(Self.duration(elapsed))")
            } else {
                details.append("\(Self.duration(Double(total - done) / perSecond)) left")
            }
        } else if final {
            details.append("in \(Self.duration(elapsed))")
        }
        if let step, !final { details.append(step) }
        let text = details.joined(separator: ", ")
        if isTerminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            writeRaw("\r\(label) [\(bar)] \(percent)% \(text)\u{1B}[K" + (final ? "\n" : ""))
        } else {
            writeRaw("\(label): \(percent)% (\(text))\n")
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `0.4 s`, `12 s`, `3 min 5 s`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        if seconds < 10 { return "\(tenths(seconds)) s" }
        let whole = Int(seconds.rounded())
        return whole < 60 ? "\(whole) s" : "\(whole / 60) min \(whole % 60) s"
    }

    /// Bytes below 10 KiB, else KiB below 1 MiB, else MiB: the divisor and the unit's name.
    /// Binary units, as the limits they are compared with are (1 MiB is `1.0 MiB`, not `1048.6 kB`).
    static func byteUnit(scale: Int) -> (divisor: Int, name: String) {
        if scale < 10 << 10 { return (1, "bytes") }
        return scale < 1 << 20 ? (1 << 10, "KiB") : (1 << 20, "MiB")
    }

    /// `count` in units of `divisor`: whole bytes, else with one decimal.
    static func scaled(_ count: Int, _ divisor: Int) -> String {
        divisor == 1 ? "\(count)" : tenths(Double(count) / Double(divisor))
    }

    /// `12.3 MiB`, `975 bytes`.
    static func bytes(_ count: Int) -> String {
        let (divisor, name) = byteUnit(scale: count)
        return "\(scaled(count, divisor)) \(name)"
    }

    static func tenths(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    private func writeRaw(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
