public import HearthJSON

/// The leaderships a node's log went through: for each epoch (the fencing token of a
/// leadership: docs/cluster.md, "etcd layout"), the first revision written in it — PostgreSQL's timeline
/// history. A replica adopts its leader's history; a new leader appends `[epoch, rev + 1]`.
/// Comparing two histories tells the last revision both logs share (docs/cluster.md, "A node that comes back").
///
/// Kept in the data directory as `HISTORY` (`{"origin":"…","epochs":[[epoch,firstRev],…]}`,
/// written atomically; the bare list of earlier versions still reads); a directory without it (a
/// standalone server's) has the empty history, whose records belong to epoch 0.
///
/// `origin` names the log the records come from: a node makes one up when it first joins a
/// cluster, and a replica takes its leader's. Records of epoch 0 (written before any leadership)
/// are the same on two nodes only when their origins are: two directories that each started
/// with their own data share nothing.
public struct EpochHistory: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public let epoch: UInt64
        public let firstRev: UInt64

        public init(epoch: UInt64, firstRev: UInt64) {
            self.epoch = epoch
            self.firstRev = firstRev
        }
    }

    /// In increasing order of epoch and of first revision.
    public private(set) var entries: [Entry]
    /// The log these records come from; nil until the node first joins a cluster.
    public var origin: String?

    public init(_ entries: [Entry] = [], origin: String? = nil) {
        self.entries = entries
        self.origin = origin
    }

    /// A new origin: 128 random bits in hex.
    public static func newOrigin() -> String {
        var generator = SystemRandomNumberGenerator()
        return [generator.next(), generator.next()].map { (value: UInt64) in
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// The epoch of the last leadership (0 when none).
    public var lastEpoch: UInt64 { entries.last?.epoch ?? 0 }

    /// The epoch revision `rev` was written in (0 before the first entry).
    public func epoch(of rev: UInt64) -> UInt64 {
        entries.last { $0.firstRev <= rev }?.epoch ?? 0
    }

    /// Starts `epoch` at `firstRev`: entries that start at or after `firstRev` are dropped (they
    /// were never written, or were moved aside), and an epoch already last is kept.
    public mutating func begin(epoch: UInt64, firstRev: UInt64) {
        if entries.last?.epoch == epoch { return }
        entries.removeAll { $0.firstRev >= firstRev || $0.epoch >= epoch }
        entries.append(Entry(epoch: epoch, firstRev: firstRev))
    }

    /// The last revision a log with this history up to `lastRev` shares with a log with
    /// `other`'s history up to `otherLastRev`: both hold the same records up to it (records of one
    /// epoch are the same on every node that has them, since one leader wrote them).
    public func sharedRev(lastRev: UInt64, with other: EpochHistory, otherLastRev: UInt64) -> UInt64 {
        var shared: UInt64 = 0
        // Walk the epochs both went through, in order; epoch 0 (before any leadership) is shared
        // by construction.
        let mine = [Entry(epoch: 0, firstRev: 1)] + entries
        let theirs = [Entry(epoch: 0, firstRev: 1)] + other.entries
        for (index, entry) in mine.enumerated() {
            guard index < theirs.count, theirs[index] == entry else { break }
            let myEnd = index + 1 < mine.count ? mine[index + 1].firstRev - 1 : lastRev
            let theirEnd = index + 1 < theirs.count ? theirs[index + 1].firstRev - 1 : otherLastRev
            shared = min(myEnd, theirEnd)
            if myEnd != theirEnd { break }
        }
        return min(shared, lastRev, otherLastRev)
    }

    /// `[[epoch,firstRev],…]`.
    public var json: JSONValue {
        .array(entries.map { .array([.int(Int64(clamping: $0.epoch)), .int(Int64(clamping: $0.firstRev))]) })
    }

    /// `HISTORY`'s content: `{"origin":"…","epochs":[[epoch,firstRev],…]}`.
    public var fileJSON: JSONValue {
        var members = [JSONMember("epochs", json)]
        if let origin { members.insert(JSONMember("origin", .string(origin)), at: 0) }
        return .object(members)
    }

    /// Parses `HISTORY`: the object `fileJSON` writes, or the bare list of earlier versions (no
    /// origin).
    public init?(fileJSON: JSONValue) {
        guard case .object = fileJSON else {
            self.init(json: fileJSON)
            return
        }
        guard let epochs = fileJSON["epochs"], let history = EpochHistory(json: epochs) else { return nil }
        let origin = fileJSON["origin"]
        guard origin == nil || origin?.stringValue?.isEmpty == false else { return nil }
        self.init(history.entries, origin: origin?.stringValue)
    }

    /// Parses `[[epoch,firstRev],…]`; nil when it is not that shape or not in increasing order.
    public init?(json: JSONValue) {
        guard case .array(let items) = json else { return nil }
        var entries: [Entry] = []
        for item in items {
            guard case .array(let pair) = item, pair.count == 2, case .int(let epoch) = pair[0],
                case .int(let first) = pair[1], epoch > 0, first > 0
            else { return nil }
            if let last = entries.last, last.epoch >= UInt64(epoch) || last.firstRev > UInt64(first) { return nil }
            entries.append(Entry(epoch: UInt64(epoch), firstRev: UInt64(first)))
        }
        self.entries = entries
        self.origin = nil
    }
}
