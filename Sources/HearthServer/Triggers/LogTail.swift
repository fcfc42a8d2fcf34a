import HearthCore
import HearthStorage

/// The newest writes of a database's log, read once for all of its triggers: each with the tree
/// before and after it, pruned to what the triggers' patterns cover. A trigger whose next
/// revision is in the window takes its writes from here; one further behind reads the log on its
/// own until it catches up (`TriggerWorker`).
///
/// The window holds the last `capacity` writes and their trees (persistent trees: each differs
/// from the one before by the paths the write set). It grows only when a trigger asks for the
/// revision after it, so while every trigger waits (a receiver down), nothing is read.
///
/// Confined to its runner's lock.
final class LogTail {
    static let capacity = 4096

    /// The literal prefixes of the triggers' patterns: the tree is kept under them only.
    let prefixes: [Path]
    private var reader: LogReader
    /// The tree as of `firstRev - 1`.
    private var base: Node
    /// Writes `firstRev`… in order, each with the tree after it.
    private var window: [(write: CommittedWrite, after: Node)] = []
    private(set) var firstRev: UInt64

    /// The revision of the last write read.
    var rev: UInt64 { firstRev + UInt64(window.count) - 1 }

    /// A tail at revision `rev`, whose whole tree is `tree`.
    init(rev: UInt64, tree: Node, prefixes: [Path], archive: LogArchive) {
        self.prefixes = prefixes.contains(where: \.isRoot) ? [Path([])] : prefixes
        self.reader = archive.reader(after: rev)
        self.firstRev = rev + 1
        self.base = Node.empty
        self.base = pruned(tree)
    }

    func close() { reader.close() }

    /// Write `rev` with the trees before and after it, reading it first when it is the next one
    /// and at most `head`; nil when `rev` is before the window or not readable yet.
    func entry(_ rev: UInt64, head: UInt64) throws(StorageError) -> (write: CommittedWrite, before: Node, after: Node)?
    {
        if rev == self.rev + 1 {
            guard rev <= head, let write = try reader.next(through: head) else { return nil }
            let before = window.last?.after ?? base
            window.append((write, applying(write, to: before)))
            if window.count > Self.capacity {
                let dropped = window.count - Self.capacity
                base = window[dropped - 1].after
                window.removeFirst(dropped)
                firstRev += UInt64(dropped)
            }
        }
        guard rev >= firstRev, rev <= self.rev else { return nil }
        let index = Int(rev - firstRev)
        return (window[index].write, index == 0 ? base : window[index - 1].after, window[index].after)
    }

    private func applying(_ write: CommittedWrite, to tree: Node) -> Node {
        var tree = tree
        var prune = false
        for (path, node) in write.overwrites {
            if prefixes.contains(where: { $0.contains(path) }) {
                tree = tree.setting(path, to: node)
            } else if prefixes.contains(where: { path.contains($0) }) {
                tree = tree.setting(path, to: node)
                prune = true
            }
        }
        return prune ? pruned(tree) : tree
    }

    /// `tree` with only what it has under the prefixes.
    private func pruned(_ tree: Node) -> Node {
        guard !prefixes.contains(where: \.isRoot) else { return tree }
        var kept = Node.empty
        for prefix in prefixes { kept = kept.setting(prefix, to: tree.child(at: prefix)) }
        return kept
    }
}
