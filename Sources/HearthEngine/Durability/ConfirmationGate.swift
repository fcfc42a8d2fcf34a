import HearthCore
import NIOConcurrencyHelpers

/// The confirmed revision, and the outputs held until it covers them (docs/cluster.md, "What an acknowledgement means",
/// `syncReplicas ≥ 1`): shared by the engine and the event loop that reads a replica's
/// acknowledgements. It also holds outputs until the local log has their revision durably, when
/// the engine went on without waiting for an fsync (`Storage.append(_:deferringSync:)`): the
/// sync thread releases them.
///
/// A leader's answers wait for its replicas. When only the engine took an acknowledgement, the
/// answers it confirmed also waited for the engine turn in progress, usually the next batch's
/// fsync. The loop that reads an acknowledgement now releases them itself (`acknowledged`); the
/// engine still takes it for the rest (lag, switchover, telling the replicas).
///
/// Outputs are delivered under the lock, so each connection gets them in the order they were
/// made whichever thread releases them. Under `syncReplicas: 0` with `fsync` other than
/// `always`, nothing is ever held and the lock is taken once per engine turn at most.
package final class ConfirmationGate: Sendable {
    typealias Outputs = [(session: SessionLink, items: [Outbound])]

    /// Outputs that show revisions up to `needs`, held since `since` (ms) until replicas
    /// confirm `needs` (`forReplicas`) and the log has it durably (`forDisk`).
    struct Entry {
        let needs: UInt64
        let since: Int64
        var outputs: Outputs
        let forReplicas: Bool
        let forDisk: Bool
    }

    private struct State {
        var confirmedRev: UInt64 = 0
        /// The highest revision the local log has durably, for batches whose fsync the engine
        /// did not wait for (`Storage.append(_:deferringSync:)`).
        var durableRev: UInt64 = 0
        var entries: [Entry] = []
        var syncReplicas = 0
        /// The highest revision each streaming replica acknowledged, by peer session.
        var acked: [UInt64: UInt64] = [:]
        /// Time answers spent held, summed (ms).
        var waitedMs: Int64 = 0
    }

    private let state = NIOLockedValueBox(State())

    /// The highest revision whose acknowledgement the leader released (on a replica: as the
    /// leader last said).
    var confirmedRev: UInt64 { state.withLockedValue { $0.confirmedRev } }

    /// The highest revision the local log has durably, as far as the gate heard (outputs up to
    /// it that waited for the disk are released).
    var durableRev: UInt64 { state.withLockedValue { $0.durableRev } }

    /// Whether outputs are waiting.
    var isHolding: Bool { state.withLockedValue { !$0.entries.isEmpty } }

    /// Time held answers spent waiting, summed (ms).
    var waitedMs: Int64 { state.withLockedValue { $0.waitedMs } }

    /// Sets the confirmed revision without releasing anything (a node joining its cluster, or a
    /// leader that confirms everything itself under `syncReplicas: 0`).
    package func reset(confirmedRev: UInt64) { state.withLockedValue { $0.confirmedRev = confirmedRev } }

    /// How many replicas must acknowledge a revision to confirm it (0: the leader alone).
    package func configure(syncReplicas: Int) { state.withLockedValue { $0.syncReplicas = syncReplicas } }

    /// A replica started streaming on peer session `stream`, having everything up to `ackedRev`.
    func streamStarted(_ stream: UInt64, ackedRev: UInt64) {
        state.withLockedValue { $0.acked[stream] = ackedRev }
    }

    /// The highest revision each streaming replica acknowledged, by peer session.
    var streamAcknowledgements: [UInt64: UInt64] { state.withLockedValue { $0.acked } }

    /// A stream ended: its acknowledgements no longer count.
    func streamEnded(_ stream: UInt64) { state.withLockedValue { _ = $0.acked.removeValue(forKey: stream) } }

    /// Every stream ended (a leader stepping down, or ending its streams).
    func endStreams() { state.withLockedValue { $0.acked = [:] } }

    /// A replica acknowledged everything up to `rev` (any thread). Releases what that confirms, when
    /// `syncReplicas` streams now have it; acknowledgements of sessions that are not streams are
    /// ignored.
    package func acknowledged(stream: UInt64, rev: UInt64, now: Int64) {
        state.withLockedValue { state in
            guard let previous = state.acked[stream], rev > previous else { return }
            state.acked[stream] = rev
            let needed = state.syncReplicas
            guard needed > 0, state.acked.count >= needed else { return }
            let confirmed = state.acked.values.sorted(by: >)[needed - 1]
            Self.advance(&state, to: confirmed, now: now)
        }
    }

    /// Raises the confirmed revision to `rev` (when higher), releasing what it covers.
    func advance(to rev: UInt64, now: Int64) {
        state.withLockedValue { Self.advance(&$0, to: rev, now: now) }
    }

    /// The log has every revision up to `rev` durably: releases what waited for that (any
    /// thread). Returns whether the replicas had confirmed more than the log had durably before,
    /// so that a leader's `confirmedRev` (the lower of the two) rose.
    @discardableResult
    func durable(upTo rev: UInt64, now: Int64) -> Bool {
        state.withLockedValue { state in
            guard rev > state.durableRev else { return false }
            let replicasWereAhead = state.confirmedRev > state.durableRev
            state.durableRev = rev
            Self.release(&state, now: now)
            return replicasWereAhead
        }
    }

    /// The local log was replaced and has everything up to `rev` durably (`rev` may be lower
    /// than before: a replica installed its leader's snapshot).
    func resetDurable(to rev: UInt64) { state.withLockedValue { $0.durableRev = rev } }

    /// Delivers `outputs`, made at revision `rev`, or holds those that show revisions not yet
    /// confirmed by replicas (`forReplicas`: `syncReplicas ≥ 1` in a cluster) or not yet durable
    /// in the local log (`forDisk`: an fsync is still running). Items that `goesUnheld` (stream
    /// lines, cluster notices: how confirmation happens) always go at once.
    func deliverOrHold(_ outputs: Outputs, rev: UInt64, forReplicas: Bool, forDisk: Bool, now: Int64) {
        guard forReplicas || forDisk else {
            Engine.deliver(outputs)
            return
        }
        state.withLockedValue { state in
            let mustHold =
                !state.entries.isEmpty || (forReplicas && rev > state.confirmedRev)
                || (forDisk && rev > state.durableRev)
            var delivered: Outputs = []
            var later: Outputs = []
            for (session, items) in outputs {
                // A connection's outputs are usually all of one kind, and then are not copied.
                let unheld = items.count(where: \.goesUnheld)
                if !mustHold || unheld == items.count {
                    delivered.append((session, items))
                } else if unheld == 0 {
                    later.append((session, items))
                } else {
                    delivered.append((session, items.filter(\.goesUnheld)))
                    later.append((session, items.filter { !$0.goesUnheld }))
                }
            }
            Engine.deliver(delivered)
            if !later.isEmpty {
                state.entries.append(
                    Entry(needs: rev, since: now, outputs: later, forReplicas: forReplicas, forDisk: forDisk))
            }
        }
    }

    /// Answers held `timeoutMs` or longer fail with `error`; the rest of their outputs (events)
    /// stay held, delivered if and when their revisions are confirmed.
    func expire(now: Int64, timeoutMs: Int64, _ error: DatabaseError) {
        state.withLockedValue { state in
            var failed: Outputs = []
            for index in state.entries.indices
            where state.entries[index].forReplicas && now - state.entries[index].since >= timeoutMs {
                var kept: Outputs = []
                for (session, items) in state.entries[index].outputs {
                    let rest = items.filter { if case .response = $0 { false } else { true } }
                    let answers = Self.failedAnswers(items, error)
                    if !rest.isEmpty { kept.append((session, rest)) }
                    if !answers.isEmpty { failed.append((session, answers)) }
                }
                state.entries[index].outputs = kept
            }
            Engine.deliver(failed)
        }
    }

    /// Every held answer fails with `error`, and every held event is dropped.
    func failAll(_ error: DatabaseError) {
        state.withLockedValue { state in
            let entries = state.entries
            state.entries = []
            Self.fail(entries, error)
        }
    }

    /// Outputs held for revisions above `rev` are never delivered: their answers fail with
    /// `error` and their events are dropped.
    func drop(above rev: UInt64, _ error: DatabaseError) {
        state.withLockedValue { state in
            let stale = state.entries.filter { $0.needs > rev }
            guard !stale.isEmpty else { return }
            state.entries.removeAll { $0.needs > rev }
            Self.fail(stale, error)
        }
    }

    private static func advance(_ state: inout State, to rev: UInt64, now: Int64) {
        guard rev > state.confirmedRev else { return }
        state.confirmedRev = rev
        release(&state, now: now)
    }

    /// Delivers the entries, oldest first, that nothing holds any longer.
    private static func release(_ state: inout State, now: Int64) {
        var released: Outputs = []
        var count = 0
        for entry in state.entries {
            guard !entry.forReplicas || entry.needs <= state.confirmedRev,
                !entry.forDisk || entry.needs <= state.durableRev
            else { break }
            if entry.forReplicas { state.waitedMs += max(0, now - entry.since) }
            released += entry.outputs
            count += 1
        }
        guard count > 0 else { return }
        state.entries.removeFirst(count)
        Engine.deliver(released)
    }

    private static func fail(_ entries: [Entry], _ error: DatabaseError) {
        var outputs: Outputs = []
        for entry in entries {
            for (session, items) in entry.outputs {
                let answers = failedAnswers(items, error)
                if !answers.isEmpty { outputs.append((session, answers)) }
            }
        }
        Engine.deliver(outputs)
    }

    /// The answers among `items`, each failing with `error` instead.
    private static func failedAnswers(_ items: [Outbound], _ error: DatabaseError) -> [Outbound] {
        items.compactMap { item in
            if case .response(let id, _) = item { .response(id, .failure(error)) } else { nil }
        }
    }
}
