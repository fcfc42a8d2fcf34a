import Logging

extension SecurityState {
    /// Counts a limit that a connection from `peer` hit (`limitHits`) and logs it as a notice,
    /// rate-limited (a client that keeps hitting a limit must not fill the log), with `peer`
    /// among the metadata.
    func limitHit(_ message: Logger.Message, peer: String, metadata: Logger.Metadata = [:], logger: Logger) {
        counters.limitHits.add(1)
        noticeLog.notice(logger, message, metadata: metadata.merging(["peer": "\(peer)"]) { given, _ in given })
    }
}
