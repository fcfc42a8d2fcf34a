import HearthCore

/// The most recent revisions in memory, each as the nodes its write replaced, so that a
/// cache-mode subscription can resume from a revision: the location's node as of that revision is
/// the current one with the newer entries undone (docs/PROTOCOL.md, "Resuming"). Engine-confined.
///
/// An entry holds, for each location the write changed (`Write.paths`), the node that was there
/// before: an O(1) capture of the persistent tree. Where the write changed the shape of an
/// ancestor — turned a leaf into an object by writing below it, or emptied it by removing its
/// last child (an object that becomes empty loses its priority) — the ancestor's old node is kept
/// instead (the highest such one), since setting the child back could not restore it. Undoing an
/// entry is then exactly setting each kept node back.
///
/// `capacity` bounds the replaced nodes kept, not the writes: a write that changed 1,000 paths
/// counts 1,000 (at least 1), and the oldest revisions go once the total passes it (the newest
/// always stays). For single-path writes it is the number of revisions; a bulk import cannot make
/// the log hold a copy of every key it wrote.
///
/// Empty after a restart: it holds only revisions this process made.
struct ChangeLog {
    struct Entry {
        let rev: UInt64
        /// Where, and what was there before the write.
        let changes: [(path: Path, before: Node)]
    }

    let capacity: Int
    /// Oldest first from `head`; grows as writes come, up to `capacity` entries. The slots
    /// before `head` are dropped entries (emptied), reclaimed once they are half the array: a
    /// drop empties a slot rather than moving the others.
    private var entries: [Entry] = []
    private var head = 0
    /// The replaced nodes the entries hold (each entry at least 1).
    private var weight = 0

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { entries.count - head }

    private func entry(_ i: Int) -> Entry? {
        guard i >= 0, i < count else { return nil }
        return entries[head + i]
    }

    /// The revision of the oldest entry kept, nil when empty.
    var oldestRev: UInt64? { count == 0 ? nil : entry(0)?.rev }

    /// Records a committed write of revision `rev` that changed `paths` (`Write.paths`) of
    /// `before` into `after`. O(depth) child lookups per path. `setsNonEmptyValue`: the write put
    /// a non-empty value at its one path (not a priority), so every ancestor of that path is now a
    /// non-empty object and only `before` needs walking.
    mutating func record(rev: UInt64, paths: [Path], before: Node, after: Node, setsNonEmptyValue: Bool = false) {
        guard capacity > 0 else { return }
        record(
            rev: rev,
            kept: Self.kept(paths: paths) { path in
                setsNonEmptyValue
                    ? before.undoPoint(ofNonEmptySetAt: path)
                    : Self.undoPoint(of: path, before: before, after: after)
            })
    }

    /// Records a committed write of revision `rev` with what it replaced, found as it was applied
    /// (`Node.set(_:toNonEmpty:)`) or before (`Node.undoPoint(ofNonEmptySetAt:)`): the engine then
    /// holds no reference to the old tree, so that the write changes the current one in place.
    mutating func record(rev: UInt64, kept changes: [(path: Path, before: Node)]) {
        guard capacity > 0 else { return }
        let entry = Entry(rev: rev, changes: changes)
        entries.append(entry)
        weight += Self.weight(of: entry)
        while weight > capacity, count > 1 { dropOldest() }
    }

    /// Each path's undo point, the repeats of a path's undo point dropped.
    private static func kept(
        paths: [Path], undoPoint: (Path) -> (path: Path, before: Node)
    ) -> [(path: Path, before: Node)] {
        var changes: [(path: Path, before: Node)] = []
        changes.reserveCapacity(paths.count)
        for path in paths {
            let kept = undoPoint(path)
            if let last = changes.last, last.path == kept.path { continue }
            changes.append(kept)
        }
        return changes
    }

    private static func weight(of entry: Entry) -> Int { max(1, entry.changes.count) }

    /// What a dropped entry's slot holds until it is reclaimed (nothing of the tree).
    private static let dropped = Entry(rev: 0, changes: [])

    private mutating func dropOldest() {
        guard count > 0 else { return }
        weight -= Self.weight(of: entries[head])
        entries[head] = Self.dropped
        head += 1
        if head >= 64, head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    /// The node to keep for a write at `path`: the old node of the highest ancestor whose shape
    /// the write changed (leaf to object, or non-empty to empty), else the old node at `path`.
    static func undoPoint(of path: Path, before: Node, after: Node) -> (path: Path, before: Node) {
        var old = before
        var new = after
        for depth in 0..<path.count {
            if old.isEmpty { return (path, .empty) }
            if (old.isLeaf && !new.isLeaf) || new.isEmpty {
                return (Path(Array(path.segments[..<depth])), old)
            }
            let key = path.segments[depth]
            old = old.child(key)
            new = new.child(key)
        }
        return (path, old)
    }

    /// Drops the entries of revisions after `rev` (the log refused them).
    mutating func drop(after rev: UInt64) {
        while count > 0, let last = entries.last, last.rev > rev {
            weight -= Self.weight(of: last)
            entries.removeLast()
        }
    }

    /// Whether every revision after `since` up to `current` is here.
    func covers(since: UInt64, current: UInt64) -> Bool {
        guard let oldest = oldestRev, since < current else { return false }
        return since >= oldest - 1
    }

    /// What happened to `location` after revision `since` (which `covers` must allow): nil when
    /// no write after it touched the location (at, above or below it); otherwise its node as of
    /// `since`, rebuilt from `current` (its node now), and the keys of its children that may
    /// have changed (nil when a write at or above it may have changed any).
    func undo(
        _ location: Path, to since: UInt64, current: Node
    ) -> (node: Node, changedChildren: [Key]?)? {
        var node = current
        var touched = false
        var keys: Set<Key>? = []
        var i = count - 1
        while i >= 0, let entry = entry(i), entry.rev > since {
            for change in entry.changes.reversed() {
                if let below = change.path.relative(location) {
                    node = change.before.child(at: below)
                    keys = nil
                    touched = true
                } else if let relative = location.relative(change.path) {
                    node = node.setting(relative, to: change.before)
                    if let first = relative.segments.first { keys?.insert(first) }
                    touched = true
                }
            }
            i -= 1
        }
        guard touched else { return nil }
        return (node, keys.map(Array.init))
    }
}
