import HearthCore
import HearthStorage

/// A batch the log has written but not yet fsynced (`fsync: always`, the fsync deferred to the
/// storage's sync thread): how to undo it should that fsync fail.
struct UndurableBatch {
    /// The batch's last revision.
    let lastRev: UInt64
    /// Puts the tree back as of the batch's start (`undo.rev`).
    let undo: UndoLog
}

/// Fsyncs overlapped with the next batches.
///
/// Under `fsync: always` a standalone engine writes a batch to the log and goes on to the next
/// one while the storage's sync thread fsyncs it. Nothing the batch produced leaves before its
/// fsync: its acknowledgements, its events and any read that shows it wait in the confirmation
/// gate, which the sync thread opens. If the fsync fails, the engine undoes every batch it had
/// not made durable, newest first, as it undoes one batch whose append failed: their answers
/// fail with `unavailable`, their events are dropped, and the log is cut back to the last durable
/// batch.
extension Engine {
    /// Whether this engine's appends leave their fsync to the sync thread: under
    /// `fsync: always`, on a standalone node, on a leader under `syncReplicas ≥ 1` (whose
    /// replicas show nothing before its `confirmedRev`, which then waits for its own fsync too)
    /// and on a replica (whose acknowledgements the sync thread sends, `DeferredAcks`). A leader
    /// under `syncReplicas: 0` streams a batch only once its fsync is done, and a candidate
    /// logs nothing new: both wait for it.
    var defersFsync: Bool {
        guard storage?.options.fsync == .always else { return false }
        return replicator?.leavesFsyncToSyncThread ?? true
    }

    /// The log took the batch's records: they are committed. When their fsync was deferred
    /// (`durableLater`), their undo is kept and their write ids stay unsettled until it ends.
    func committed(_ batch: inout Batch, durableLater: Bool) {
        if durableLater {
            undurable.append(UndurableBatch(lastRev: database.rev, undo: batch.undo))
        } else {
            writeIDs.settle()
        }
        batch.committed(rev: database.rev)
    }

    /// How many records a turn commits at most at once (a leader may stream a long turn in
    /// slices, `Replicator.commitSlice`).
    var streamSlice: Int { replicator?.commitSlice ?? .max }

    /// The highest revision whose acknowledgement this node released: confirmed by the
    /// replicas it waits for, and durable in its own log. A leader's records and heartbeats
    /// carry it as `confirmedRev`.
    var releasedRev: UInt64 {
        let confirmed = confirmations.confirmedRev
        return undurable.isEmpty ? confirmed : min(confirmed, confirmations.durableRev)
    }

    /// Hooks the storage's sync thread to the confirmation gate (before the first request).
    func observeDeferredSyncs() {
        guard let storage else { return }
        confirmations.durable(upTo: database.rev, now: clock())
        storage.durabilityObserver = { [weak self] rev in
            guard let self else { return }
            let releasedRose = confirmations.durable(upTo: rev, now: clock())
            durabilityListener.withLockedValue { $0 }?(rev)
            logged(through: rev)
            // A leader's replicas learn the new `releasedRev` (a heartbeat, when no records
            // carry it first). When the replicas had not confirmed more than the log had, their
            // acknowledgement is still to come, and its turn tells them.
            if releasedRose, isLeading { loop.execute { self.replicator?.releasedRevMayHaveRisen() } }
        }
        storage.failureObserver = { [weak self] _ in
            guard let self else { return }
            loop.execute { self.settleUndurable() }
        }
    }

    /// Forgets the undo of the batches that became durable; after a failed fsync, undoes those
    /// that did not. Engine thread, at the start of each turn.
    func settleUndurable() {
        guard let storage, let last = undurable.last else { return }
        if let error = storage.adoptSyncFailure() {
            storageFailed(error)
            undoUndurable(durableRev: storage.durableRev)
            return
        }
        // The gate's revision, not the storage's: once the gate has it, it has released what
        // it covers, so later outputs cannot overtake them.
        let durable = confirmations.durableRev
        guard durable >= undurable[0].lastRev else { return }
        if durable >= last.lastRev {
            undurable.removeAll(keepingCapacity: true)
        } else {
            undurable.removeAll { $0.lastRev <= durable }
        }
        writeIDs.settle(through: durable)
    }

    /// Waits for the fsync in flight and settles (before a barrier or a snapshot: nothing it
    /// shows may be lost).
    func waitUntilDurable() {
        guard let storage, !undurable.isEmpty else { return }
        storage.waitForDeferredSync()
        settleUndurable()
    }

    /// Undoes the batches after `durableRev`, newest first: their held answers fail, their
    /// events are dropped.
    private func undoUndurable(durableRev: UInt64) {
        let lost = undurable.filter { $0.lastRev > durableRev }
        undurable.removeAll()
        guard !lost.isEmpty else { return }
        undo(lost.map(\.undo))
        if let replicator {
            var batch = Batch(rev: database.rev)
            replicator.logLost(batch: &batch)
            deliver(batch.outputs)
        }
        confirmations.drop(
            above: database.rev,
            DatabaseError(
                .unavailable,
                "storage failed (\(storageFailure?.message ?? "fsync failed")); the writes this answer showed or made could not be made durable and were undone; writes are refused until the server restarts"
            ))
    }

    /// Delivers the turn's outputs, or holds those that show unconfirmed revisions
    /// (`ConfirmationGate`).
    func deliverOrHold(_ outputs: [(session: SessionLink, items: [Outbound])]) {
        let holding = replicator?.holdsOutputs ?? false
        confirmations.deliverOrHold(
            outputs, rev: database.rev, forReplicas: holding, forDisk: !undurable.isEmpty, now: holding ? clock() : 0)
    }
}
