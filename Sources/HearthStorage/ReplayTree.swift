import HearthCore

/// Replays logged writes onto a tree in bulk during recovery.
///
/// `Database.replay` rebuilds the path from the root for every write, copying O(log n) branches
/// of every persistent child map on the way; replaying a log of a million small writes into a
/// node with a million children that way takes over ten seconds. This overlay applies each write
/// in place to mutable shadows of the touched nodes — with exactly the semantics of
/// `Node.setting(_:to:)`: `.priority` segments, leaves turned into objects, objects that become
/// empty losing their priority — and builds the persistent tree once at the end, merging each
/// touched child map with its changes in one linear pass.
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

    private var leaf: LeafValue?
    private var priority: Priority?
    /// The children as of the last whole replacement of this node.
    private var base = ChildMap()
    /// Children changed since, by key (an empty child stands for a removal).
    private var changes: [Key: Child] = [:]
    /// The keys of `changes` in the order they were first changed: usually already sorted (push
    /// ids, counters), which makes sorting them for `build` linear.
    private var changeOrder: [Key] = []
    /// The number of non-empty children now.
    private var count = 0

    init(_ node: Node) {
        replace(with: node)
    }

    private var isEmpty: Bool { leaf == nil && count == 0 }

    private func replace(with node: Node) {
        switch node.content {
        case .leaf(let value):
            leaf = value
            base = ChildMap()
            count = 0
        case .children(let map):
            leaf = nil
            base = map
            count = map.count
        }
        priority = node.priority
        changes = [:]
        changeOrder = []
    }

    private func hasChild(_ key: Key) -> Bool {
        if let child = changes[key] { return !child.isEmpty }
        return base[key] != nil
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
        let existed = hasChild(first)
        let child: Child
        if path.count == 1 {
            child = .node(node)
        } else {
            let shadow: ReplayTree
            switch changes[first] {
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
            changes = [first: child]
            changeOrder = [first]
            count = 1
            return
        }
        if child.isEmpty {
            guard existed else {
                // Still absent; an empty change over a base child keeps standing for its removal.
                if base[first] != nil { record(first, child) }
                return
            }
            record(first, child)
            count -= 1
            if count == 0 {
                base = ChildMap()
                changes = [:]
                changeOrder = []
                priority = nil
            }
        } else {
            if !existed { count += 1 }
            record(first, child)
        }
    }

    private func record(_ key: Key, _ child: Child) {
        if changes.updateValue(child, forKey: key) == nil { changeOrder.append(key) }
    }

    /// The persistent tree.
    func build() -> Node {
        if let leaf { return .leaf(leaf, priority: priority) }
        if count == 0 { return .empty }
        if changes.isEmpty { return .object(base, priority: priority) }
        var map = base
        if changes.count * 16 < base.count {
            for (key, child) in changes {
                let node = child.build()
                map = node.isEmpty ? map.removing(key) : map.inserting(key, node)
            }
        } else {
            var changed: [(Key, Node)] = []
            changed.reserveCapacity(changeOrder.count)
            for key in changeOrder {
                if let child = changes[key] { changed.append((key, child.build())) }
            }
            changed.sort { Key.compare($0.0, $1.0) < 0 }
            var entries: [(Key, Node)] = []
            entries.reserveCapacity(count)
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
            map = ChildMap(sortedUniqueEntries: entries)
        }
        return .object(map, priority: priority)
    }
}
