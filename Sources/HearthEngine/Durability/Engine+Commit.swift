import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// Group commit: a batch's records go to the log (per the fsync policy) before anything they
/// produced leaves; a failed log undoes them and refuses writes from then on.
extension Engine {
    /// Makes the batch's writes and onDisconnect changes durable (per the fsync policy) before
    /// anything they produced leaves; if the log fails, undoes the writes and refuses writes and
    /// registrations from now on. (The onDisconnect queues are not undone: after a failure no
    /// queue runs or changes again in this process, and the log keeps what it had.)
    ///
    /// In a cluster each record is encoded once, for the log and the replication stream; a
    /// leader under `syncReplicas ≥ 1` sends the records to its replicas between its log's write
    /// and its fsync, so that both flush at once (docs/cluster.md, "Replication stream").
    func commit(_ batch: inout Batch) {
        guard batch.hasUncommittedRecords else { return }
        defer { tally.acknowledgementsSettled() }
        guard let storage else {
            batch.committed(rev: database.rev)
            writeIDs.settle()
            replicator?.committed(batch.encodedRecords(), streamed: nil, now: clock(), batch: &batch)
            return
        }
        if let replicator, replicator.isFenced {
            // Fenced (docs/cluster.md, "Election and fencing"): nothing of this batch is logged or acknowledged.
            rollBack(&batch, answering: DatabaseError(.unavailable, "not the leader: its lease could not be confirmed"))
            return
        }
        var streamed: StreamedEarly?
        var records: [EncodedRecord] = []
        let deferring = defersFsync
        do {
            guard let replicator else {
                try storage.append(batch.logged, deferringSync: deferring)
                committed(&batch, durableLater: deferring)
                if !deferring { logged(through: database.rev) }
                return
            }
            // Each payload encoded once, into the log's buffer, which the stream and the
            // retained log then slice.
            records = try storage.appendEncoding(
                batch.logged, received: { batch.receivedPayload($0) }, deferringSync: deferring,
                beforeSync: { encoded in streamed = replicator.beforeSync(encoded, batch: batch) })
            if replicator.isFenced {
                // The proof ran out during the append (a stalled disk, a paused process): the
                // batch stays in this node's log only, to be moved aside when it rejoins.
                replicator.loggedWhileFenced(streamed: streamed, batch: &batch)
                rollBack(
                    &batch,
                    answering:
                        DatabaseError(
                            .unavailable,
                            "outcome unknown: the leader's lease could not be confirmed after logging the write"))
                return
            }
            committed(&batch, durableLater: deferring)
            if !deferring { logged(through: database.rev) }
            if !records.isEmpty { replicator.committed(records, streamed: streamed, now: clock(), batch: &batch) }
        } catch {
            storageFailed(error)
            replicator?.commitFailed(streamed: streamed, batch: &batch)
            rollBack(&batch, answering: unavailable)
            // An earlier batch's deferred fsync may have failed too: undo what it did not keep.
            settleUndurable()
        }
    }

    /// Tells the log's listener (a trigger runner) that the log holds every record through
    /// `rev` for good. Any thread.
    func logged(through rev: UInt64) {
        logListener.withLockedValue { $0 }?(rev)
    }

    /// Undoes the batch's uncommitted writes in memory and answers them with `error` (their events
    /// are dropped): the log failed, or a leader could not prove its lease.
    func rollBack(_ batch: inout Batch, answering error: DatabaseError) {
        undo([batch.undo])
        batch.rolledBack(error)
        tally.acknowledgementsRefused()
    }

    /// Puts the tree back as of the first undo log's start, undoing the logs newest first, and
    /// with it the write ids, the change log and the views.
    func undo(_ logs: [UndoLog]) {
        guard let oldest = logs.first else { return }
        let refusedRoot = database.root
        var root = refusedRoot
        for log in logs.reversed() { root = log.undone(root) }
        database.restore(root: root, rev: oldest.rev)
        writeIDs.forget(after: database.rev)
        changeLog.drop(after: database.rev)
        views.resync(from: refusedRoot, to: database.root, rev: database.rev)
    }

    var unavailable: DatabaseError {
        DatabaseError(
            .unavailable,
            "storage failed (\(storageFailure?.message ?? "unknown error")); the write was not applied; writes are refused until the server restarts"
        )
    }

    func storageFailed(_ error: StorageError) {
        guard storageFailure == nil else { return }
        storageFailure = error
        metrics.storageFailed(reason: error.message)
        logger.critical(
            "STORAGE FAILED: refusing all writes until restart; reads continue",
            metadata: ["error": "\(error.message)"])
    }

    /// Under `fsync: everysec`: fsyncs the log when due (called once a second).
    package func syncIfDue() {
        loop.preconditionInEventLoop()
        guard let storage, storageFailure == nil else { return }
        do { try storage.syncIfDue() } catch { storageFailed(error) }
    }

    /// Flushes and closes the log (graceful shutdown, after the last batch).
    package func closeStorage() {
        loop.preconditionInEventLoop()
        do { try storage?.close() } catch {
            logger.error("closing the log failed", metadata: ["error": "\(error.message)"])
        }
    }
}
