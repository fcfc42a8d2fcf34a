import HearthStorage

/// The engine's side of the metrics: a turn is timed from its start, and what it did is handed to
/// `ServerMetrics` once, at its end. Engine thread.
extension Engine {
    /// When a turn started, and the revision before it.
    struct TurnStart {
        let time: ContinuousClock.Instant
        let rev: UInt64
    }

    /// Call first thing in a turn.
    func startTurn() -> TurnStart {
        TurnStart(time: .now, rev: database.rev)
    }

    /// Call at the end of a turn, once `batch` has been committed and before its outputs are
    /// delivered (so that what a client was answered is already counted). The writes
    /// committed are the revisions gained (a write the log refused was undone, revision and all);
    /// the events are those `batch` handed out.
    func finishTurn(_ start: TurnStart, batch: Batch, submissions: Int, storage: Storage?) {
        tally.events += batch.eventCount
        let writes = database.rev > start.rev ? Int(truncatingIfNeeded: database.rev - start.rev) : 0
        tally.writes += writes
        metrics.publish(
            &tally, duration: .now - start.time, submissions: submissions,
            gauges: ServerMetrics.EngineGauges(
                rev: database.rev, subscriptions: views.subscriptionCount, views: views.viewCount,
                walBytes: writes > 0 ? storage?.walBytes : nil))
    }
}
