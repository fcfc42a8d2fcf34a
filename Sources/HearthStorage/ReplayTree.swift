import HearthCore
import HearthJSON

/// Replays logged writes onto a tree in bulk during recovery.
///
/// `Database.replay` rebuilds the path from the root for every write, copying O(log n) branches
/// of every persistent child map on the way; replaying a log of a million small writes into a
/// node with a million children that way takes over ten seconds. This overlay applies each write
/// in place to mutable shadows of the touched nodes — with exactly the semantics of
/// `Node.setting(_:to:)`: `.priority` segments, leaves turned into objects, objects that become
/// empty losing their priority — and builds the persistent tree once at the end, merging each
/// touched child map with its changes in one linear pass.
///
/// Whether a changed key was already a child of the base map is looked up only when it matters
/// (a removal, or a question of emptiness the counts cannot settle), so that a log of inserts
/// costs no lookups in the base map at all.
final class ReplayTree {
    /// A child as changed by the replay: a node set as a whole, or a shadow written below.
    private enum Child {
        case node(Node)
        case shadow(ReplayTree)

        var isEmpty: Bool {
            switch self {
            case .node(let node): return node.isEmpty
            case .shadow(let shadow): return shadow.isEmpty
            }
        }

        func build() -> Node {
            switch self {
            case .node(let node): return node
            case .shadow(let shadow): return shadow.build()
            }
        }
    }

    private struct Change {
        var child: Child
        /// Whether the key is a child of `base`; nil until looked up.
        var inBase: Bool?
    }

    /// A key hashed by its UTF-8 bytes in one go (equal keys have equal bytes).
    private struct HashedKey: Hashable {
        let key: Key

        static func == (a: HashedKey, b: HashedKey) -> Bool {
            a.key.string.utf8Equals(b.key.string)
        }

        func hash(into hasher: inout Hasher) {
            var string = key.string
            string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    private var leaf: LeafValue?
    private var priority: Priority?
    /// The children as of the last whole replacement of this node.
    private var base = ChildMap()
    /// Children changed since (an empty child stands for a removal), in the order they were
    /// first changed: usually already sorted (push ids, counters), which makes sorting them for
    /// `build` linear.
    private var changeKeys: [Key] = []
    private var changeValues: [Change] = []
    /// Where each changed key is in `changeKeys`.
    private var changeIndex: [HashedKey: Int] = [:]
    /// Changes whose child is not empty.
    private var nonEmptyChanges = 0
    /// Changes known to override a child of `base`, and changes not looked up yet.
    private var changesInBase = 0
    private var changesUnknown = 0

    init(_ node: Node) {
        replace(with: node)
    }

    private func replace(with node: Node) {
        switch node.content {
        case .leaf(let value):
            leaf = value
            base = ChildMap()
        case .children(let map):
            leaf = nil
            base = map
        }
        priority = node.priority
        clearChanges()
    }

    private func clearChanges() {
        changeKeys = []
        changeValues = []
        changeIndex = [:]
        nonEmptyChanges = 0
        changesInBase = 0
        changesUnknown = 0
    }

    /// Whether this node is empty now.
    private var isEmpty: Bool {
        if leaf != nil || nonEmptyChanges > 0 { return false }
        // Children of the base that no change overrides.
        if base.count - changesInBase - changesUnknown > 0 { return false }
        if changesUnknown > 0 { resolveUnknownChanges() }
        return base.count - changesInBase == 0
    }

    private func resolveUnknownChanges() {
        for index in changeValues.indices where changeValues[index].inBase == nil {
            let inBase = base[changeKeys[index]] != nil
            changeValues[index].inBase = inBase
            changesUnknown -= 1
            if inBase { changesInBase += 1 }
        }
    }

    /// The index of the change of `key`, if any.
    private func changeIndex(of key: Key) -> Int? {
        changeIndex[HashedKey(key: key)]
    }

    /// Records `child` as the new value of `key`, whose change is at `index` (nil when the key
    /// has none yet); `previous` tells whether that change had a non-empty child.
    private func record(_ key: Key, _ child: Child, at index: Int?, previous: Bool) {
        if let index {
            if previous { nonEmptyChanges -= 1 }
            changeValues[index].child = child
        } else {
            changeIndex[HashedKey(key: key)] = changeKeys.count
            changeKeys.append(key)
            changeValues.append(Change(child: child, inBase: nil))
            changesUnknown += 1
        }
        if !child.isEmpty { nonEmptyChanges += 1 }
    }

    /// Applies one overwrite, as `Node.setting(path, to: node)` would.
    func set(_ path: ArraySlice<Key>, to node: Node) {
        guard let first = path.first else {
            replace(with: node)
            return
        }
        if path.count == 1, first == Key.priority {
            if !isEmpty { priority = node.asPriority }
            return
        }
        if node.isEmpty, isEmpty { return }
        let index = changeIndex(of: first)
        // Before a shadow below is changed in place.
        let previous = index.map { !changeValues[$0].child.isEmpty }
        let child: Child
        if path.count == 1 {
            child = .node(node)
        } else {
            let shadow: ReplayTree
            switch index.map({ changeValues[$0].child }) {
            case .shadow(let existing)?: shadow = existing
            case .node(let existing)?: shadow = ReplayTree(existing)
            case nil: shadow = ReplayTree(base[first] ?? .empty)
            }
            shadow.set(path.dropFirst(), to: node)
            child = .shadow(shadow)
        }
        // Node.settingChild.
        if leaf != nil {
            if child.isEmpty { return }
            leaf = nil
            base = ChildMap()
            clearChanges()
            record(first, child, at: nil, previous: false)
            return
        }
        if child.isEmpty {
            // Removing a missing child changes nothing; removing the last one empties the node,
            // which loses its priority.
            guard previous ?? (base[first] != nil) else { return }
            record(first, child, at: index, previous: previous ?? false)
            if isEmpty {
                base = ChildMap()
                clearChanges()
                priority = nil
            }
        } else {
            record(first, child, at: index, previous: previous ?? false)
        }
    }

    /// The persistent tree.
    func build() -> Node {
        if let leaf { return .leaf(leaf, priority: priority) }
        var map = base
        if changeKeys.isEmpty {
            // Unchanged children.
        } else if changeKeys.count * 16 < base.count {
            for (key, change) in zip(changeKeys, changeValues) {
                let node = change.child.build()
                map = node.isEmpty ? map.removing(key) : map.inserting(key, node)
            }
        } else {
            map = ChildMap(sortedUniqueEntries: mergedEntries())
        }
        return .object(map, priority: priority)
    }

    /// The children of `base` merged with the changes, in key order, without empty ones.
    private func mergedEntries() -> [(Key, Node)] {
        var changed: [(Key, Node)] = []
        changed.reserveCapacity(changeKeys.count)
        var sorted = true
        for (key, change) in zip(changeKeys, changeValues) {
            if sorted, let last = changed.last, Key.compare(last.0, key) >= 0 { sorted = false }
            changed.append((key, change.child.build()))
        }
        if !sorted { changed.sort { Key.compare($0.0, $1.0) < 0 } }
        var entries: [(Key, Node)] = []
        entries.reserveCapacity(base.count + nonEmptyChanges)
        var iterator = changed.makeIterator()
        var pending = iterator.next()
        for (key, node) in base {
            while let change = pending, Key.compare(change.0, key) < 0 {
                if !change.1.isEmpty { entries.append(change) }
                pending = iterator.next()
            }
            if let change = pending, Key.compare(change.0, key) == 0 {
                if !change.1.isEmpty { entries.append(change) }
                pending = iterator.next()
            } else {
                entries.append((key, node))
            }
        }
        while let change = pending {
            if !change.1.isEmpty { entries.append(change) }
            pending = iterator.next()
        }
        return entries
    }
}
