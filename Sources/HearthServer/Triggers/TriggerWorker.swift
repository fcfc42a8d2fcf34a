import HearthCore
import HearthStorage
import NIOCore
import NIOSSL

/// One trigger's progress through the log: it reads the writes after its cursor with each
/// location's value before and after — from its database's `LogTail` when it is near the head,
/// otherwise on its own, keeping the part of the tree its pattern covers — turns each matching
/// change into an event, and delivers the events in log order, at most `maxConcurrency` at once.
///
/// Ordering: events are sent in log order. Up to `maxConcurrency` consecutive ones are in flight
/// together and may arrive in any order among themselves. Once one fails, nothing after it is
/// sent until it is delivered or goes to the dead-letter list, so a retry is overtaken by at
/// most the events already in flight when it failed.
///
/// Confined to its runner's lock.
final class TriggerWorker {
    /// One event read from the log and not yet delivered.
    struct Pending {
        let id: String
        let rev: UInt64
        let path: String
        let kind: TriggerKind
        /// The server's time of the write (ms), from which `maxAgeSeconds` counts.
        let writtenAt: Int64
        let body: [UInt8]
        var attempts = 0
        var inFlight = false
        var done = false
        /// When a failed event may be sent again (ms); nil: not failed.
        var retryAt: Int64?
        var lastError = ""
        /// A dead letter sent again by `replay`: on success it leaves the list.
        var replayed = false
    }

    var settings: TriggerSettings
    let source: TriggerSource
    let url: HTTPURL
    /// Kept-alive connections to the receiver, as many as deliveries in flight.
    let pool: HTTPConnectionPool
    /// Every event up to here is delivered or dead-lettered.
    var cursor: UInt64
    var lostRevisions: UInt64
    /// The cursor as last saved.
    var savedCursor: TriggerFiles.Cursor?
    /// The next revision to read.
    var nextRev: UInt64
    /// Reading on its own, behind the tail: its reader at `nextRev` and the part of the tree
    /// under the pattern's literal prefix at `nextRev - 1`. Nil while it reads from the tail.
    var own: (reader: LogReader, shadow: Node)?
    let prefix: Path
    var pending: [Pending] = []
    /// Dead letters sent again, ahead of new events.
    var replays: [Pending] = []
    var deadLetters: [DeadLetter]
    var lost = false
    /// Bumped when the worker is rebuilt (after a gap): late answers of the old one are ignored.
    var generation = 0
    var delivered = 0
    var failed = 0
    var retried = 0
    var lastError: String?

    /// How many events are read ahead of the oldest undelivered one.
    var readAhead: Int { max(64, settings.maxConcurrency * 4) }
    /// How many revisions past the cursor are read at most: while the oldest events are not
    /// delivered yet, writes that change nothing the trigger watches are not read on and on.
    static let readAheadRevisions: UInt64 = 4096

    init(
        settings: TriggerSettings, source: TriggerSource, url: HTTPURL, pool: HTTPConnectionPool,
        cursor: TriggerFiles.Cursor, deadLetters: [DeadLetter]
    ) {
        self.settings = settings
        self.source = source
        self.url = url
        self.pool = pool
        self.cursor = cursor.rev
        self.lostRevisions = cursor.lostRevisions
        self.savedCursor = cursor
        self.nextRev = cursor.rev + 1
        self.prefix = Self.literalPrefix(of: settings.pattern)
        self.deadLetters = deadLetters
    }

    /// The leading literal keys of a pattern: every location it matches is below them.
    static func literalPrefix(of pattern: TriggerPattern) -> Path {
        var keys: [Key] = []
        for segment in pattern.segments {
            guard case .literal(let key) = segment else { break }
            keys.append(key)
        }
        return Path(keys)
    }

    /// A tree holding only what `tree` has under `prefix`.
    static func pruned(_ tree: Node, to prefix: Path) -> Node {
        prefix.isRoot ? tree : Node.empty.setting(prefix, to: tree.child(at: prefix))
    }

    /// Starts over at `rev` with the tree at it: what was read ahead is dropped, and answers to
    /// deliveries in flight are ignored (`generation`).
    func restart(at rev: UInt64, tree: Node, archive: LogArchive) {
        own?.reader.close()
        own = (archive.reader(after: rev), Self.pruned(tree, to: prefix))
        nextRev = rev + 1
        pending.removeAll()
        replays.removeAll { $0.inFlight }
        generation += 1
    }

    /// Forgets what was read ahead and in flight: the next read starts again after the cursor.
    func resetToCursor() {
        close()
        nextRev = cursor + 1
        pending.removeAll()
        for index in replays.indices { replays[index].inFlight = false }
        generation += 1
    }

    /// Lets go of its own reading.
    func close() {
        own?.reader.close()
        own = nil
    }

    var cursorRecord: TriggerFiles.Cursor { TriggerFiles.Cursor(rev: cursor, lostRevisions: lostRevisions) }

    var inFlight: Int { (pending + replays).reduce(0) { $0 + ($1.inFlight ? 1 : 0) } }

    // MARK: Reading

    /// Reads writes up to `head` while the read-ahead has room (in events and in revisions past
    /// the cursor), at most `budget` of them (so
    /// that the thread gets back to its deliveries' answers), turning matching changes into
    /// events. Nothing is read while the oldest undelivered event waits for a retry: nothing
    /// after it could be sent, and the log keeps the rest (a receiver that is down costs the
    /// server no reading). Returns whether the budget ran out with more to read. Throws when
    /// the log has a gap.
    @discardableResult
    func read(
        through head: UInt64, tail: LogTail?, archive: LogArchive, trees: inout [UInt64: Node], database: String,
        now: Int64, budget: Int = .max
    ) throws(StorageError) -> Bool {
        guard !waitsForARetry else { return false }
        var read = 0
        var more = false
        while pending.count < readAhead, nextRev <= cursor + Self.readAheadRevisions, nextRev <= head {
            guard read < budget else {
                more = true
                break
            }
            let write: CommittedWrite
            let before: Node
            let after: Node
            if let entry = try tail?.entry(nextRev, head: head) {
                close()
                (write, before, after) = entry
            } else {
                if own == nil { own = try ownReading(at: nextRev - 1, archive: archive, trees: &trees) }
                guard var reading = own else { break }
                let next = try reading.reader.next(through: head)
                own = reading
                guard let next else { break }
                write = next
                before = reading.shadow
                for (path, node) in write.overwrites {
                    if prefix.contains(path) {
                        reading.shadow = reading.shadow.setting(path, to: node)
                    } else if path.contains(prefix) {
                        reading.shadow = Self.pruned(reading.shadow.setting(path, to: node), to: prefix)
                    }
                }
                after = reading.shadow
                own = reading
            }
            read += 1
            nextRev += 1
            if before.isIdentical(to: after) { continue }
            for change in settings.changes(at: write.overwrites.map(\.path), before: before, after: after) {
                let event = TriggerEvent(
                    database: database, trigger: settings.name, change: change, revision: Int64(clamping: write.rev),
                    timestamp: write.author?.time ?? now, auth: Self.auth(write.author?.identity))
                pending.append(
                    Pending(
                        id: event.id, rev: write.rev, path: change.path.description, kind: change.kind,
                        writtenAt: event.timestamp, body: event.body()))
            }
        }
        advanceCursor()
        return more
    }

    /// A reader at `rev` and the tree then (memoized per revision in `trees` for the triggers of
    /// one pass); throws when the log can no longer rebuild it.
    private func ownReading(
        at rev: UInt64, archive: LogArchive, trees: inout [UInt64: Node]
    ) throws(StorageError) -> (reader: LogReader, shadow: Node) {
        if trees[rev] == nil { trees[rev] = try archive.tree(at: rev) }
        guard let tree = trees[rev] else {
            throw StorageError.corrupt(
                file: archive.retainedDirectory, offset: 0, reason: "the log files after rev \(rev) are gone",
                directory: archive.dataDirectory)
        }
        return (archive.reader(after: rev), Self.pruned(tree, to: prefix))
    }

    /// Whether the oldest undelivered event failed and waits for its next attempt.
    var waitsForARetry: Bool { pending.contains { $0.retryAt != nil } }

    static func auth(_ identity: AuthContext?) -> TriggerAuth {
        guard let identity else { return .none }
        return identity.isAdmin ? .admin : .user(uid: identity.uid, token: identity.claims)
    }

    /// Drops the delivered events at the front and moves the cursor up to just before the oldest
    /// undelivered one (or to what was read).
    func advanceCursor() {
        while pending.first?.done == true { pending.removeFirst() }
        cursor = max(cursor, pending.first.map { $0.rev - 1 } ?? (nextRev - 1))
    }

    // MARK: Sending

    /// The events to send now (marked in flight): replays first, then new events in order; none
    /// past a failed one until it is due again.
    func due(now: Int64) -> [Pending] {
        var sending: [Pending] = []
        var flying = inFlight
        for queueIsReplays in [true, false] {
            var index = 0
            while index < (queueIsReplays ? replays.count : pending.count), flying < settings.maxConcurrency {
                let event = queueIsReplays ? replays[index] : pending[index]
                if event.done || event.inFlight {
                    index += 1
                    continue
                }
                if let retryAt = event.retryAt {
                    guard retryAt <= now else { return sending }
                }
                if queueIsReplays { replays[index].inFlight = true } else { pending[index].inFlight = true }
                sending.append(event)
                flying += 1
                index += 1
                if event.retryAt != nil { return sending }
            }
            if flying >= settings.maxConcurrency { break }
        }
        return sending
    }

    /// Records the outcome of one attempt. Returns a dead letter to keep when the event ran out
    /// of time, and whether a replayed dead letter was delivered (it leaves the list).
    func finished(id: String, replay: Bool, error: String?, now: Int64) -> (dead: DeadLetter?, replayDelivered: Bool) {
        let found: Int? =
            replay
            ? replays.firstIndex { $0.id == id && $0.inFlight } : pending.firstIndex { $0.id == id && $0.inFlight }
        guard let index = found else { return (nil, false) }
        var event = replay ? replays[index] : pending[index]
        event.inFlight = false
        event.attempts += 1
        var dead: DeadLetter?
        if let error {
            failed += 1
            lastError = error
            event.lastError = error
            let age = now - event.writtenAt
            if age >= Int64(settings.maxAgeSeconds) * 1000 {
                event.done = true
                dead = DeadLetter(
                    id: event.id, rev: event.rev, path: event.path, kind: event.kind, deadAt: now,
                    attempts: event.attempts, lastError: error, body: event.body)
            } else {
                retried += 1
                event.retryAt = now + Self.backoff(attempts: event.attempts)
            }
        } else {
            delivered += 1
            event.done = true
            event.retryAt = nil
        }
        if replay {
            if event.done { replays.remove(at: index) } else { replays[index] = event }
        } else {
            pending[index] = event
            advanceCursor()
        }
        return (dead, replay && error == nil)
    }

    /// Milliseconds before attempt `attempts + 1`: 250 ms doubling up to a minute, each with
    /// up to a half of it taken off at random so that failed events do not all come back
    /// together.
    static func backoff(attempts: Int) -> Int64 {
        let base = min(60_000, 250 << min(attempts - 1, 10))
        return Int64(base / 2 + Int.random(in: 0...(base / 2)))
    }

    var state: TriggerState {
        if lost { return .lost }
        if pending.contains(where: { $0.retryAt != nil }) || replays.contains(where: { $0.retryAt != nil }) {
            return .retrying
        }
        return pending.isEmpty && replays.isEmpty ? .idle : .delivering
    }

    /// How long the oldest undelivered event has waited, in seconds.
    func lagSeconds(now: Int64) -> Double {
        guard let oldest = pending.first(where: { !$0.done }) else { return 0 }
        return Double(max(0, now - oldest.writtenAt)) / 1000
    }
}
