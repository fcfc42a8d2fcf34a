/// The database state: one JSON tree and its revision. Pure and synchronous; the server's
/// engine owns one and applies writes to it in a total order.
public struct Database: Sendable {
    /// The whole tree. Copying it is an O(1) snapshot.
    public private(set) var root: Node
    /// The revision: +1 per committed write.
    public private(set) var rev: UInt64
    public let limits: Limits

    public init(root: Node = .empty, rev: UInt64 = 0, limits: Limits = .default) {
        self.root = root
        self.rev = rev
        self.limits = limits
    }

    /// The outcome of one write.
    public enum Outcome: Sendable {
        /// The write was applied; `previousRoot` is the tree before it and `logged` what the
        /// write-ahead log must record to replay it.
        case committed(logged: CommittedWrite, previousRoot: Node)
        /// A transaction whose expectation did not match; nothing changed.
        case stale(current: Node)
    }

    /// Applies `write` atomically at time `now` (ms since the epoch, for server values).
    public mutating func apply(_ write: Write, now: Int64) -> Outcome {
        let before = root
        switch applyInPlace(write, now: now) {
        case .committed(let logged): return .committed(logged: logged, previousRoot: before)
        case .stale(let current): return .stale(current: current)
        }
    }

    /// What `applyInPlace` did.
    public enum Applied: Sendable {
        case committed(CommittedWrite)
        /// A transaction whose expectation did not match; nothing changed.
        case stale(current: Node)
    }

    /// Applies `write` like `apply(_:now:)` without keeping the tree as it was, so that the
    /// nodes on the written paths that no snapshot shares change in place (`Node.set`; `apply`
    /// holds the old root, so there every path is copied).
    public mutating func applyInPlace(_ write: Write, now: Int64) -> Applied {
        let overwrites: [(path: Path, node: Node)]
        switch write {
        case .set(let path, let value):
            overwrites = [(path, value.resolved(at: path, in: root, now: now, limits: limits))]
        case .update(let base, let values):
            overwrites = values.map { relative, value in
                let path = base.appending(relative)
                return (path, value.resolved(at: path, in: root, now: now, limits: limits))
            }
        case .overwrites(let entries):
            // Each entry resolves against the state left by the ones before it.
            var resolved: [(path: Path, node: Node)] = []
            resolved.reserveCapacity(entries.count)
            for (path, value) in entries {
                let node = value.resolved(at: path, in: root, now: now, limits: limits)
                root.set(path, to: node)
                resolved.append((path, node))
            }
            rev += 1
            return .committed(CommittedWrite(rev: rev, overwrites: resolved))
        case .transaction(let path, let value, let expectation, let valueHasPriority):
            let current = root.child(at: path)
            guard expectation.matches(current) else { return .stale(current: current) }
            var node = value.resolved(at: path, in: root, now: now, limits: limits)
            if !valueHasPriority { node = node.withPriority(current.priority) }
            overwrites = [(path, node)]
        }
        for (path, node) in overwrites { root.set(path, to: node) }
        rev += 1
        return .committed(CommittedWrite(rev: rev, overwrites: overwrites))
    }

    /// `applyInPlace` for a write that sets a non-empty value at one path (`Write.nonEmptySet`),
    /// which also returns the write's undo point (`Node.undoPoint(ofNonEmptySetAt:)`), found on
    /// the way down. Nil, with nothing applied, when the value resolves to empty.
    public mutating func applyInPlace(
        settingNonEmpty value: PreparedValue, at path: Path, now: Int64
    ) -> (logged: CommittedWrite, undoPoint: (path: Path, before: Node))? {
        let node = value.resolved(at: path, in: root, now: now, limits: limits)
        guard !node.isEmpty else { return nil }
        let undoPoint = root.set(path, toNonEmpty: node)
        rev += 1
        return (CommittedWrite(rev: rev, overwrites: [(path, node)]), undoPoint)
    }

    /// Applies a logged write (recovery, a replica), making its revision current; in place,
    /// where no snapshot shares the nodes.
    public mutating func replay(_ write: CommittedWrite) {
        for (path, node) in write.overwrites { root.set(path, to: node) }
        rev = write.rev
    }

    /// `replay(_:)` of a write that sets one non-empty node (not a priority) at `path`
    /// (`CommittedWrite.nonEmptySet`), returning its undo point, found on the way down.
    public mutating func replay(settingNonEmpty node: Node, at path: Path, rev: UInt64) -> (path: Path, before: Node) {
        let undoPoint = root.set(path, toNonEmpty: node)
        self.rev = rev
        return undoPoint
    }

    /// Replaces the whole state (recovery from storage).
    public mutating func restore(root: Node, rev: UInt64) {
        self.root = root
        self.rev = rev
    }
}

/// A committed write as the write-ahead log records it: the overwrites it made, in order, with
/// every server value resolved and every push id chosen, so that replaying it is deterministic.
/// Who made a write and the server's time when it was applied: what a trigger's event reports
/// (`auth` and `timestamp`).
public struct WriteAuthor: Sendable {
    /// The server's time of the write (ms since the epoch).
    public let time: Int64
    /// The writer: an admin, a user with their verified claims, or nil for an unauthenticated
    /// connection (or the server itself, such as an onDisconnect write of one).
    public let identity: AuthContext?

    public init(time: Int64, identity: AuthContext?) {
        self.time = time
        self.identity = identity
    }
}

public struct CommittedWrite: Sendable {
    public let rev: UInt64
    /// Paths may end in `.priority` (the node is then the priority, or empty for none).
    public let overwrites: [(path: Path, node: Node)]
    /// The write id the request carried and the shape of its answer (nil for most writes).
    public var tag: WriteTag?
    /// Who made the write and when, logged only for databases with triggers (nil otherwise).
    public var author: WriteAuthor?

    public init(rev: UInt64, overwrites: [(path: Path, node: Node)], tag: WriteTag? = nil, author: WriteAuthor? = nil) {
        self.rev = rev
        self.overwrites = overwrites
        self.tag = tag
        self.author = author
    }

    /// The path and node of a write that sets one non-empty node, not a priority (which can be
    /// applied in place with `Database.replay(settingNonEmpty:at:rev:)`); nil for any other.
    public var nonEmptySet: (path: Path, node: Node)? {
        guard overwrites.count == 1, let (path, node) = overwrites.first, !node.isEmpty, path.last != Key.priority
        else { return nil }
        return (path, node)
    }

    /// For a push, its key: the last segment of its only overwrite.
    public var pushKey: String? {
        guard tag?.kind == .push else { return nil }
        return overwrites.last?.path.last?.string
    }
}
