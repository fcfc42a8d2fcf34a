import HearthCore
import HearthStorage

/// The outcomes of committed writes that carried a write id (docs/PROTOCOL.md, "Write ids"), so that a
/// write retried after a lost answer is answered again instead of applied again.
///
/// Per client id it keeps the `capacity` most recent ids (older ones are forgotten, and the
/// highest sequence number forgotten that way is kept: a retry at or below it is refused as
/// expired rather than applied again); a client that made no write for `retention` ms is forgotten
/// whole, and so is the least recently writing client when more than `maxClients` are kept.
///
/// A value type (its storage is copied on write), so that a compaction can take an O(1) copy on
/// the engine thread and encode it on the storage's queue. Otherwise engine-confined.
package struct WriteIDWindow: Sendable {
    /// The first answer of a remembered write.
    struct Outcome: Sendable, Equatable {
        let rev: UInt64
        let kind: WriteTag.Kind
        /// For a push, its key.
        let pushKey: String?
    }

    /// What a write id comes to before its write is applied.
    enum Lookup: Equatable {
        /// Not remembered: apply the write.
        case new
        /// Applied before: answer this, apply nothing.
        case duplicate(Outcome)
        /// Forgotten to make room (at or below the highest sequence forgotten): refuse.
        case expired
    }

    private struct Remembered: Sendable {
        let sequence: UInt64
        let outcome: Outcome
        let at: Int64
    }

    private struct Client: Sendable {
        /// Remembered ids, oldest first, from `head` on (a queue; the prefix is compacted away).
        var order: [Remembered] = []
        var head = 0
        var bySequence: [UInt64: Outcome] = [:]
        /// The highest sequence forgotten because of `capacity`.
        var highestEvicted: UInt64 = 0
        /// When it last wrote (ms), and its place in `recency`.
        var lastWrite: Int64 = 0
        var stamp: UInt64 = 0

        var count: Int { order.count - head }
    }

    let capacity: Int
    let retention: Int64
    let maxClients: Int
    private var clients: [String: Client] = [:]
    /// Clients in the order they last wrote, oldest first, with stale entries (a stamp that is no
    /// longer the client's) skipped lazily; from `recencyHead` on.
    private var recency: [(client: String, stamp: UInt64)] = []
    private var recencyHead = 0
    private var nextStamp: UInt64 = 1
    /// Ids remembered since the last `settle()`: what a storage rollback may have to forget.
    private var unsettled: [(client: String, sequence: UInt64, rev: UInt64)] = []

    /// - Parameters:
    ///   - capacity: ids kept per client (`writeIdWindow`); 0 remembers nothing.
    ///   - retentionSeconds: a client idle this long is forgotten (`writeIdRetentionSeconds`).
    ///   - maxClients: clients kept at most (least recently writing forgotten first).
    init(capacity: Int, retentionSeconds: Int, maxClients: Int = 100_000) {
        self.capacity = max(0, capacity)
        self.retention = Int64(max(0, retentionSeconds)) * 1000
        self.maxClients = max(1, maxClients)
    }

    /// The number of clients remembered (tests, diagnostics).
    var clientCount: Int { clients.count }

    /// What `id` comes to at time `now` (ms).
    mutating func lookup(_ id: WriteID, now: Int64) -> Lookup {
        guard capacity > 0, let client = clients[id.client] else { return .new }
        if now - client.lastWrite > retention {
            clients[id.client] = nil
            return .new
        }
        if let outcome = client.bySequence[id.sequence] { return .duplicate(outcome) }
        return id.sequence <= client.highestEvicted ? .expired : .new
    }

    /// Remembers the outcome of a committed write that carried `tag`.
    mutating func remember(_ tag: WriteTag, rev: UInt64, pushKey: String?) {
        guard capacity > 0 else { return }
        let name = tag.id.client
        let stamp = nextStamp
        nextStamp += 1
        var client = clients.removeValue(forKey: name) ?? Client()
        if tag.at - client.lastWrite > retention, client.count > 0 { client = Client() }
        let outcome = Outcome(rev: rev, kind: tag.kind, pushKey: pushKey)
        if client.bySequence.updateValue(outcome, forKey: tag.id.sequence) != nil {
            // Applied again after it was forgotten and re-learned: keep the newest outcome only.
            client.order = client.order[client.head...].filter { $0.sequence != tag.id.sequence }
            client.head = 0
        }
        client.order.append(Remembered(sequence: tag.id.sequence, outcome: outcome, at: tag.at))
        while client.count > capacity {
            let oldest = client.order[client.head]
            client.head += 1
            client.bySequence[oldest.sequence] = nil
            client.highestEvicted = max(client.highestEvicted, oldest.sequence)
        }
        if client.head > 64, client.head * 2 > client.order.count {
            client.order.removeFirst(client.head)
            client.head = 0
        }
        client.lastWrite = max(client.lastWrite, tag.at)
        client.stamp = stamp
        clients[name] = client
        recency.append((name, stamp))
        unsettled.append((name, tag.id.sequence, rev))
        forgetIdle(now: tag.at)
        if recency.count - recencyHead > 2 * clients.count + 64 { compactRecency() }
    }

    /// Forgets the clients idle for longer than the retention, and the least recently writing
    /// ones beyond `maxClients`. O(1) amortised.
    mutating func forgetIdle(now: Int64) {
        while recencyHead < recency.count {
            let (name, stamp) = recency[recencyHead]
            guard let client = clients[name], client.stamp == stamp else {
                recencyHead += 1
                continue
            }
            guard clients.count > maxClients || now - client.lastWrite > retention else { break }
            clients[name] = nil
            recencyHead += 1
        }
        if recencyHead > 64, recencyHead * 2 > recency.count {
            recency.removeFirst(recencyHead)
            recencyHead = 0
        }
    }

    /// Drops the stale entries of `recency`, keeping its order.
    private mutating func compactRecency() {
        recency = recency[recencyHead...].filter { clients[$0.client]?.stamp == $0.stamp }
        recencyHead = 0
    }

    /// The log took what was remembered so far.
    mutating func settle() {
        unsettled.removeAll(keepingCapacity: true)
    }

    /// The log has the writes up to `rev` durably (a deferred fsync finished): what they
    /// remembered can no longer be forgotten.
    mutating func settle(through rev: UInt64) {
        guard let last = unsettled.last else { return }
        if last.rev <= rev {
            unsettled.removeAll(keepingCapacity: true)
        } else {
            unsettled.removeAll { $0.rev <= rev }
        }
    }

    /// The log refused the writes after `rev`: forgets what they remembered. (Ids those writes
    /// pushed out stay forgotten; writes are refused until a restart, which rebuilds the window
    /// from the log.)
    mutating func forget(after rev: UInt64) {
        for entry in unsettled.reversed() where entry.rev > rev {
            guard var client = clients.removeValue(forKey: entry.client) else { continue }
            if client.bySequence[entry.sequence]?.rev == entry.rev {
                client.bySequence[entry.sequence] = nil
                if client.count > 0, client.order[client.order.count - 1].sequence == entry.sequence {
                    client.order.removeLast()
                } else {
                    client.order = client.order[client.head...].filter { $0.sequence != entry.sequence }
                    client.head = 0
                }
            }
            if client.count > 0 || client.highestEvicted > 0 { clients[entry.client] = client }
        }
        unsettled.removeAll { $0.rev > rev }
    }

    // MARK: Storage

    /// Rebuilds the window from what the log recovered, as it was when the previous run wrote
    /// those ids, then forgets what has been idle too long by `now`.
    package init(recovered log: WriteIDLog, capacity: Int, retentionSeconds: Int, maxClients: Int = 100_000, now: Int64)
    {
        self.init(capacity: capacity, retentionSeconds: retentionSeconds, maxClients: maxClients)
        guard capacity > 0 else { return }
        for (name, sequence) in log.evicted {
            var client = Client()
            client.highestEvicted = sequence
            clients[name] = client
        }
        for entry in log.entries { remember(entry.tag, rev: entry.rev, pushKey: entry.pushKey) }
        // A client named only by `evicted` has no id left (it could not have been saved so).
        clients = clients.filter { $0.value.count > 0 }
        settle()
        forgetIdle(now: now)
    }

    /// What a snapshot keeps: every remembered id in revision order, and each client's highest
    /// forgotten sequence. Runs on the compaction queue, on a copy.
    func log() -> WriteIDLog {
        var log = WriteIDLog()
        for (name, client) in clients {
            if client.highestEvicted > 0 { log.evicted[name] = client.highestEvicted }
            for remembered in client.order[client.head...] {
                guard let id = WriteID(client: name, sequence: remembered.sequence) else { continue }
                log.entries.append(
                    WriteIDLog.Entry(
                        tag: WriteTag(id: id, kind: remembered.outcome.kind, at: remembered.at),
                        rev: remembered.outcome.rev, pushKey: remembered.outcome.pushKey))
            }
        }
        log.entries.sort { $0.rev < $1.rev }
        return log
    }
}
