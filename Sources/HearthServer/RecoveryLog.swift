import HearthStorage
import Logging

/// Logs the progress of recovering the data directory at startup: one line as soon as the size
/// of the files is known, then one every few seconds with the amount done, the rate and the
/// time left, so that a large directory (seconds to minutes) never looks like a hung server.
/// Called on the thread that opens the storage.
final class RecoveryLog {
    private let logger: Logger
    private let directory: String
    private let interval: Duration
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private var lastLine: ContinuousClock.Instant?

    init(logger: Logger, directory: String, interval: Duration = .seconds(3)) {
        self.logger = logger
        self.directory = directory
        self.interval = interval
        started = clock.now
    }

    func update(_ progress: ScanProgress) {
        let now = clock.now
        guard let last = lastLine else {
            lastLine = now
            logger.info(
                "recovering the database from \(Self.megabytes(progress.total)) of data files",
                metadata: ["dataDir": "\(directory)"])
            return
        }
        guard now - last >= interval else { return }
        lastLine = now
        let elapsed = Self.seconds(now - started)
        let percent = progress.total > 0 ? progress.done * 100 / progress.total : 100
        var details = ["\(Self.megabytes(progress.done)) of \(Self.megabytes(progress.total))"]
        if elapsed > 0, progress.done > 0 {
            let rate = Double(progress.done) / elapsed
            details.append("\(Self.megabytes(Int64(rate)))/s")
            let left = Double(progress.total - progress.done) / rate
            details.append("about \(Int(left.rounded(.up))) s left")
        }
        logger.info(
            "recovering the database: \(percent)% (\(details.joined(separator: ", "))), \(progress.step.rawValue)",
            metadata: ["dataDir": "\(directory)"])
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `12.3 MB`.
    static func megabytes(_ bytes: Int64) -> String {
        let tenths = (bytes + 50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10) MB"
    }
}
