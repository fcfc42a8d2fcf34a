import HearthCore

/// What the writes of a batch since its last commit replaced, so that the engine can put the
/// tree back as of that commit if the log refuses them (`Engine.rollBack`).
///
/// It holds no snapshot of the whole tree for a write applied in place: such a snapshot shares
/// every node on the paths the next writes change, so each would be copied rather than changed
/// in place. For those writes it keeps their undo points (`ChangeLog.undoPoint`: the node each
/// replaced, or the old ancestor whose shape it changed), which no later write changes. A write
/// applied to a copy hands over the tree as it was before it, which it held anyway; from then on
/// nothing more is kept, since restoring that tree undoes every later write too.
struct UndoLog {
    /// The revision of the last commit: the one a rollback returns to.
    private(set) var rev: UInt64
    /// The undo points of the writes applied in place before `tree` was taken, oldest first.
    private var points: [[(path: Path, before: Node)]] = []
    /// The whole tree before the first write since the commit that was not applied in place.
    private var tree: Node?

    init(rev: UInt64) { self.rev = rev }

    /// Starts again from a commit of revision `rev`, keeping its storage.
    mutating func reset(rev: UInt64) {
        self.rev = rev
        points.removeAll(keepingCapacity: true)
        tree = nil
    }

    /// Notes a write applied in place, by its undo points (the change log's, which it shares).
    mutating func wrote(replacing undoPoints: [(path: Path, before: Node)]) {
        guard tree == nil else { return }
        points.append(undoPoints)
    }

    /// Notes a write applied to a copy of `before`, the whole tree before it.
    mutating func wrote(over before: Node) {
        guard tree == nil else { return }
        tree = before
    }

    /// The tree as of the last commit, rebuilt from `current`, the tree now.
    func undone(_ current: Node) -> Node {
        var root = tree ?? current
        for write in points.reversed() {
            for point in write.reversed() { root.set(point.path, to: point.before) }
        }
        return root
    }
}
