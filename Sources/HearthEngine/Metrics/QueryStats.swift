import HearthCore
import HearthJSON
import NIOConcurrencyHelpers

/// The slowest one-shot queries (a `get` with a query) and the queries on undeclared indexes of
/// the last few minutes, for the stats endpoint. Thread-safe; the engine records, readers report.
///
/// A query is recorded as slow only when it took at least `slowThreshold`, so a server whose
/// queries are all fast takes no lock for them: it compares one duration. Each list holds at most
/// `capacity` entries, one per location and query, with how often it was seen and when last;
/// entries not seen for `window` drop out. When the slow list is full, a new query takes the place
/// of the fastest entry if it was slower; when the unindexed list is full, of the entry seen
/// longest ago.
package final class QueryStats: Sendable {
    /// One entry of a report.
    package struct Entry: Sendable, Equatable {
        package var path: String
        /// The query as its wire JSON (for an unindexed query, its `orderBy`).
        package var query: String
        /// Slowest and latest run, in µs (slow queries only).
        package var maxMicros: Int64?
        package var lastMicros: Int64?
        /// How often it was seen (slow queries: how often it was at least `slowThreshold`).
        package var count: Int
        /// When it was last seen, in ms since the epoch.
        package var lastSeen: Int64
        /// Unindexed queries: refused (`strictIndexes`) rather than answered with a warning.
        package var refused: Bool?
        /// Unindexed queries: the `.indexOn` that would serve it, e.g. `"height"`.
        package var indexOn: String?
    }

    private struct SlowKey: Hashable {
        let path: Path
        let query: QuerySpec
    }

    private struct UnindexedKey: Hashable {
        let path: Path
        let order: QueryOrder
    }

    private struct Slow: LastSeen {
        var max: Duration
        var last: Duration
        var count: Int
        var lastSeen: Int64
    }

    private struct Unindexed: LastSeen {
        var count: Int
        var lastSeen: Int64
        var refused: Bool
    }

    private struct Lists {
        var slow: [SlowKey: Slow] = [:]
        var unindexed: [UnindexedKey: Unindexed] = [:]
    }

    /// A query that took at least this long is recorded as slow.
    package let slowThreshold: Duration
    /// How long an entry stays without being seen again, in ms.
    package let windowMilliseconds: Int64
    /// The most entries each list holds.
    let capacity: Int
    private let clock: @Sendable () -> Int64
    private let lists = NIOLockedValueBox(Lists())

    /// - Parameter clock: the server's time in ms since the epoch.
    init(
        slowThreshold: Duration = .milliseconds(1), windowMilliseconds: Int64 = 10 * 60 * 1000, capacity: Int = 20,
        clock: @escaping @Sendable () -> Int64
    ) {
        self.slowThreshold = slowThreshold
        self.windowMilliseconds = windowMilliseconds
        self.capacity = capacity
        self.clock = clock
    }

    /// A one-shot query at `path` took `duration`. Cheap unless it was slow.
    func queryFinished(_ query: QuerySpec, at path: Path, duration: Duration) {
        guard duration >= slowThreshold else { return }
        let now = clock()
        let key = SlowKey(path: path, query: query)
        lists.withLockedValue { lists in
            if var entry = lists.slow[key] {
                entry.max = max(entry.max, duration)
                entry.last = duration
                entry.count += 1
                entry.lastSeen = now
                lists.slow[key] = entry
                return
            }
            if lists.slow.count >= capacity { dropExpired(&lists.slow, now: now) }
            if lists.slow.count >= capacity {
                guard let fastest = lists.slow.min(by: { $0.value.max < $1.value.max }), fastest.value.max < duration
                else { return }
                lists.slow[fastest.key] = nil
            }
            lists.slow[key] = Slow(max: duration, last: duration, count: 1, lastSeen: now)
        }
    }

    /// A query ordered by `order` at `path` has no declared index: it was answered with the
    /// `index_not_defined` warning, or `refused` under `strictIndexes`.
    func unindexedQuery(_ order: QueryOrder, at path: Path, refused: Bool) {
        let now = clock()
        let key = UnindexedKey(path: path, order: order)
        lists.withLockedValue { lists in
            if var entry = lists.unindexed[key] {
                entry.count += 1
                entry.lastSeen = now
                entry.refused = refused
                lists.unindexed[key] = entry
                return
            }
            if lists.unindexed.count >= capacity { dropExpired(&lists.unindexed, now: now) }
            if lists.unindexed.count >= capacity,
                let oldest = lists.unindexed.min(by: { $0.value.lastSeen < $1.value.lastSeen })
            {
                lists.unindexed[oldest.key] = nil
            }
            lists.unindexed[key] = Unindexed(count: 1, lastSeen: now, refused: refused)
        }
    }

    /// The entries of the last `window`: the slow queries slowest first, the unindexed ones most
    /// recently seen first.
    package func report() -> (slowest: [Entry], unindexed: [Entry]) {
        let now = clock()
        let (slow, unindexed) = lists.withLockedValue { lists in
            dropExpired(&lists.slow, now: now)
            dropExpired(&lists.unindexed, now: now)
            return (lists.slow, lists.unindexed)
        }
        // The text is made here, off the engine thread, and only for what is shown.
        let slowest = slow.sorted { $0.value.max > $1.value.max }.map { key, entry in
            Entry(
                path: key.path.description, query: key.query.json.jsonString, maxMicros: entry.max.inMicroseconds,
                lastMicros: entry.last.inMicroseconds, count: entry.count, lastSeen: entry.lastSeen)
        }
        let unindexedEntries = unindexed.sorted { $0.value.lastSeen > $1.value.lastSeen }.map { key, entry in
            let orderBy = key.order.wireName
            return Entry(
                path: key.path.description, query: JSONValue.object(["orderBy": .string(orderBy)]).jsonString,
                count: entry.count, lastSeen: entry.lastSeen, refused: entry.refused,
                indexOn: key.order == .value ? ".value" : orderBy)
        }
        return (slowest, unindexedEntries)
    }

    private func dropExpired<Key, Value>(_ entries: inout [Key: Value], now: Int64) where Value: LastSeen {
        let oldest = now - windowMilliseconds
        entries = entries.filter { $0.value.lastSeen >= oldest }
    }
}

/// What an entry needs to expire.
private protocol LastSeen {
    var lastSeen: Int64 { get }
}
