/// How far a pass over a data directory has got: recovery when the server starts, and
/// `hearth check`. Counted in bytes of the data files (the snapshot, then the log segments), so
/// that one fraction covers the whole pass.
public struct ScanProgress: Sendable, Equatable {
    /// What the pass is doing.
    public enum Step: String, Sendable, Equatable {
        /// Reading and decoding the snapshot.
        case snapshot = "loading the snapshot"
        /// Replaying the write-ahead log after it.
        case log = "replaying the log"
        /// Building the tree from the replayed records (after the last byte is read).
        case tree = "building the tree"
    }

    public let step: Step
    /// Bytes of the data files handled so far.
    public let done: Int64
    /// Bytes of the snapshot and of every log segment the pass reads.
    public let total: Int64

    public init(step: Step, done: Int64, total: Int64) {
        self.step = step
        self.done = done
        self.total = total
    }
}
