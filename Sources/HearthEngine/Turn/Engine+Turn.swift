import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// The turn: drain the inbox, apply each submission in the batch, commit, deliver.
extension Engine {

    func drain() {
        loop.preconditionInEventLoop()
        let batches = inbox.withLockedValue { inbox -> [[Submission]] in
            let batches = inbox.batches
            inbox.batches = []
            inbox.scheduled = false
            return batches
        }
        if !undurable.isEmpty { settleUndurable() }
        let now = clock()
        let turn = startTurn()
        var batch = Batch(rev: database.rev, expected: lastBatchSize)
        replicator?.turnStarts(batches, now: now, batch: &batch)
        let slice = streamSlice
        for items in batches {
            for item in items { take(item, now: now, slice: slice, batch: &batch) }
        }
        commit(&batch)
        lastBatchSize = batch.size
        replicator?.turnEnds(inboxIsEmpty: !hasQueuedWork, now: now, batch: &batch)
        // Counted before anything is delivered: a client that saw an answer sees it in the metrics.
        let submissions = batches.reduce(0) { total, items in items.reduce(total) { $0 + $1.weight } }
        finishTurn(turn, batch: batch, submissions: submissions, storage: storage)
        deliverOrHold(batch.outputs)
        if !batch.barriers.isEmpty {
            waitUntilDurable()
            for promise in batch.barriers { promise.succeed() }
        }
        if let storage, storageFailure == nil, storage.wantsCompaction, !storage.isCompacting {
            // The window as of this revision (an O(1) copy), encoded on the compaction queue.
            let window = writeIDs
            storage.compact(root: database.root, rev: database.rev) { window.log() }
        }
        release(batches, submissions: submissions)
    }

    /// Lets go of a long turn's submissions on the event loop of the connection that sent the
    /// first of them rather than here: freeing their requests (which that loop allocated) is work
    /// the engine's thread, the bound of a pipelined connection, need not do. A short turn's go
    /// here, where a task would cost more than it saves.
    private func release(_ batches: consuming [[Submission]], submissions: Int) {
        guard submissions >= Self.releasedElsewhereFrom else { return }
        switch batches.first?.first {
        case .requests(let session, _)?, .request(let session, _)?:
            session.loop.execute { [batches] in _ = batches }
        default:
            return
        }
    }

    /// A turn of at least this many submissions is freed off the engine's thread (`release`): a
    /// slice of a pipelined burst (`Submission.burstSlice`) and more.
    static let releasedElsewhereFrom = Submission.burstSlice

    /// Applies one request of `session` in the turn's batch.
    private func take(_ request: Request, from session: SessionLink, now: Int64, batch: inout Batch) {
        let operation = request.operation
        if operation.readsData, batch.hasUncommittedWrites { commit(&batch) }
        if let replicator {
            replicator.route(request, operation: operation, session: session, now: now, batch: &batch)
        } else {
            handle(request, operation: operation, session: session, now: now, batch: &batch)
        }
    }

    /// Applies one submission in the turn's batch, committing whenever `slice` records wait (after
    /// each request of a run).
    private func take(_ item: Submission, now: Int64, slice: Int, batch: inout Batch) {
        switch item {
        case .request(let session, let request):
            take(request, from: session, now: now, batch: &batch)
        case .requests(let session, let requests):
            for request in requests {
                take(request, from: session, now: now, batch: &batch)
                if batch.logged.count >= slice { commit(&batch) }
            }
        case .disconnected(let sessionID):
            views.removeSession(sessionID)
            replicator?.sessionEnded(sessionID)
            forgetSession(sessionID)
            runOnDisconnect(sessionID, now: now, batch: &batch)
        case .barrier(let promise):
            batch.barriers.append(promise)
        case .identityExpired(let sessionID, let generation):
            expireIdentity(sessionID, generation: generation, now: now, batch: &batch)
        case .replaceRules(let ruleSet, let promise):
            install(ruleSet, now: now, batch: &batch)
            promise.succeed()
        case .cluster(let input):
            replicator?.take(input, now: now, batch: &batch)
        }
        if batch.logged.count >= slice { commit(&batch) }
    }

    /// Hands each connection its outputs, with one task per event loop rather than one per
    /// connection: with many connections per loop this saves most cross-thread wakeups.
    func deliver(_ outputs: some Collection<(session: SessionLink, items: [Outbound])>) {
        Self.deliver(outputs)
    }

    /// `deliver(_:)`, from any thread.
    static func deliver(_ outputs: some Collection<(session: SessionLink, items: [Outbound])>) {
        // A few event loops (one per core): a list searched in place beats a dictionary.
        var byLoop: [(loop: any EventLoop, work: [(SessionLink, [Outbound])])] = []
        for (session, items) in outputs {
            if let i = byLoop.firstIndex(where: { $0.loop === session.loop }) {
                byLoop[i].work.append((session, items))
            } else {
                byLoop.append((session.loop, [(session, items)]))
            }
        }
        for (loop, work) in byLoop {
            loop.execute {
                for (session, items) in work { session.receive(items) }
            }
        }
    }
}
