import Dispatch
import Synchronization

/// Fsyncs the log on a thread of its own, for appends that defer their fsync
/// (`Storage.append(_:deferringSync:)`): the engine applies and writes the next batch while the
/// last one is made durable, and one fsync covers every batch written before it started (group
/// commit across engine turns). Whoever answers for a deferred batch waits for `durableRev` to
/// reach it (`Storage.durabilityObserver`).
///
/// Only the engine's thread asks for fsyncs, and it waits for the one in flight (`wait`)
/// before it closes or replaces the file being synced.
final class LogSyncer: Sendable {
    /// A batch written and not yet durable: the file, the batch's last revision, and the
    /// file's end after it.
    struct Target {
        let file: OpenFile
        let rev: UInt64
        let end: Int64
    }

    private struct State {
        /// The last batch written whose fsync has not started yet.
        var wanted: Target?
        var running = false
        var durableRev: UInt64
        /// The end of the durable part of the current segment.
        var durableEnd: Int64
        var failure: StorageError?
    }

    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "hearth.storage.sync", qos: .userInitiated)
    private let fsync: @Sendable (OpenFile) throws(StorageError) -> Void
    private let onDurable: @Sendable (UInt64) -> Void
    private let onFailure: @Sendable (StorageError) -> Void

    /// - Parameters:
    ///   - durableRev, durableEnd: what is durable already (the last fsynced batch).
    ///   - fsync: fsyncs a file (timed for the storage's observer).
    ///   - onDurable: hears each new durable revision, on the syncer's thread or the engine's.
    ///   - onFailure: hears a failed fsync, on the syncer's thread; nothing is synced after it.
    init(
        durableRev: UInt64, durableEnd: Int64, fsync: @escaping @Sendable (OpenFile) throws(StorageError) -> Void,
        onDurable: @escaping @Sendable (UInt64) -> Void, onFailure: @escaping @Sendable (StorageError) -> Void
    ) {
        self.state = Mutex(State(durableRev: durableRev, durableEnd: durableEnd))
        self.fsync = fsync
        self.onDurable = onDurable
        self.onFailure = onFailure
    }

    /// The highest revision known to be durable. Any thread.
    var durableRev: UInt64 { state.withLock { $0.durableRev } }

    /// The durable revision and the end of the durable part of the current segment, and the
    /// failure that stopped the syncer, if one did.
    var status: (durableRev: UInt64, durableEnd: Int64, failure: StorageError?) {
        state.withLock { ($0.durableRev, $0.durableEnd, $0.failure) }
    }

    /// Asks for `target` (and everything written before it) to be made durable. Engine thread.
    func request(_ target: Target) {
        let start = state.withLock { state -> Bool in
            state.wanted = target
            if state.running || state.failure != nil { return false }
            state.running = true
            return true
        }
        if start { queue.async { self.run() } }
    }

    /// Records that the engine fsynced everything up to `rev` itself, the file now ending at
    /// `end` (a synchronous append, a rotation).
    func synced(upTo rev: UInt64, end: Int64) {
        let advanced = state.withLock { state -> Bool in
            guard rev >= state.durableRev else { return false }
            // The same revision again moves only the end (a rotation's new segment).
            let advanced = rev > state.durableRev
            state.durableRev = rev
            state.durableEnd = end
            if let wanted = state.wanted, wanted.rev <= rev { state.wanted = nil }
            return advanced
        }
        if advanced { onDurable(rev) }
    }

    /// Starts over from a log that has everything up to `rev` durably, its segment ending at
    /// `end` (a snapshot replaced the log; `rev` may be lower than before). Engine thread, with
    /// no fsync running.
    func reset(durableRev rev: UInt64, end: Int64) {
        state.withLock { state in
            state.wanted = nil
            state.durableRev = rev
            state.durableEnd = end
        }
    }

    /// Waits until no fsync runs or is wanted. Engine thread, which then asks for none while it
    /// waits.
    func wait() {
        queue.sync {}
    }

    /// Fsyncs the wanted target until none is left, taking the latest each time.
    private func run() {
        while true {
            let next = state.withLock { state -> Target? in
                guard state.failure == nil, let wanted = state.wanted else {
                    state.running = false
                    return nil
                }
                state.wanted = nil
                return wanted
            }
            guard let target = next else { return }
            do {
                try fsync(target.file)
            } catch {
                state.withLock {
                    $0.failure = error
                    $0.wanted = nil
                    $0.running = false
                }
                onFailure(error)
                return
            }
            let advanced = state.withLock { state -> Bool in
                guard target.rev > state.durableRev else { return false }
                state.durableRev = target.rev
                state.durableEnd = target.end
                return true
            }
            if advanced { onDurable(target.rev) }
        }
    }
}
