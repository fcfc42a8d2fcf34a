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
        /// The write was applied as revision `rev`; `previousRoot` is the tree before it.
        case committed(rev: UInt64, previousRoot: Node)
        /// A transaction whose expectation did not match; nothing changed.
        case stale(current: Node)
    }

    /// Applies `write` atomically at time `now` (ms since the epoch, for server values).
    public mutating func apply(_ write: Write, now: Int64) -> Outcome {
        let before = root
        switch write {
        case .set(let path, let value):
            root = root.setting(path, to: value.resolved(at: path, in: before, now: now, limits: limits))
        case .update(let base, let values):
            var next = root
            for (relative, value) in values {
                let path = base.appending(relative)
                next = next.setting(path, to: value.resolved(at: path, in: before, now: now, limits: limits))
            }
            root = next
        case .overwrites(let entries):
            var next = root
            for (path, value) in entries {
                next = next.setting(path, to: value.resolved(at: path, in: next, now: now, limits: limits))
            }
            root = next
        case .transaction(let path, let value, let expectation, let valueHasPriority):
            let current = root.child(at: path)
            guard expectation.matches(current) else { return .stale(current: current) }
            var node = value.resolved(at: path, in: before, now: now, limits: limits)
            if !valueHasPriority { node = node.withPriority(current.priority) }
            root = root.setting(path, to: node)
        }
        rev += 1
        return .committed(rev: rev, previousRoot: before)
    }

    /// Replaces the whole state (recovery from storage).
    public mutating func restore(root: Node, rev: UInt64) {
        self.root = root
        self.rev = rev
    }
}
