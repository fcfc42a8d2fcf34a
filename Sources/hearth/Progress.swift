#if canImport(Glibc)
import Glibc
#endif

/// Progress of `import` and `export` on stderr: a redrawn bar when stderr is a terminal, else a
/// plain line every few seconds (and at the end).
final class Progress {
    private let label: String
    private let total: Int
    private let unit: String
    private let isTerminal = isatty(2) == 1
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private var lastReport: ContinuousClock.Instant
    private var done = 0

    init(_ label: String, total: Int, unit: String) {
        self.label = label
        self.total = max(total, 0)
        self.unit = unit
        started = clock.now
        lastReport = started
    }

    func advance(by count: Int) {
        done += count
        let now = clock.now
        let interval: Duration = isTerminal ? .milliseconds(100) : .seconds(2)
        if now - lastReport >= interval {
            lastReport = now
            report(final: false)
        }
    }

    func finish() { report(final: true) }

    private func report(final: Bool) {
        let fraction = total > 0 ? min(Double(done) / Double(total), 1) : 1
        let percent = Int((fraction * 100).rounded(.down))
        let tenths = (clock.now - started) / .milliseconds(100)
        let counts = "\(done)/\(total) \(unit), \(Int(tenths) / 10).\(Int(tenths) % 10) s"
        if isTerminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            writeRaw("\r\(label) [\(bar)] \(percent)% \(counts)\u{1B}[K" + (final ? "\n" : ""))
        } else {
            writeRaw("\(label): \(percent)% (\(counts))\n")
        }
    }

    private func writeRaw(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
