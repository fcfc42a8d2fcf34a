/// A position in a `ChildIndex`: a (sort value, key) pair, where the key may also be one of the
/// sentinels MIN_NAME / MAX_NAME so that the index can seek to a query bound.
struct IndexEntry: ThreeWayComparable {
    let value: IndexValue
    /// -1 for MIN_NAME, 0 for a real key, 1 for MAX_NAME.
    let sentinel: Int8
    /// The key (meaningless for a sentinel).
    let key: Key

    static let placeholderKey = Key("")

    init(_ value: IndexValue, _ key: Key) {
        self.value = value
        self.sentinel = 0
        self.key = key
    }

    init(_ bound: QueryBound) {
        value = bound.value
        switch bound.key {
        case .min:
            sentinel = -1
            key = Self.placeholderKey
        case .max:
            sentinel = 1
            key = Self.placeholderKey
        case .key(let k):
            sentinel = 0
            key = k
        }
    }

    static func compare(_ a: IndexEntry, _ b: IndexEntry) -> Int {
        let c = IndexValue.compare(a.value, b.value)
        if c != 0 { return c }
        if a.sentinel != b.sentinel { return a.sentinel < b.sentinel ? -1 : 1 }
        if a.sentinel != 0 { return 0 }
        return Key.compare(a.key, b.key)
    }
}

/// A sorted index of one location's children under one order: a persistent `SortedTree` of
/// (sort value, key) entries, each holding the child's node.
///
/// O(n log n) to build (O(n) when the children are already in order, e.g. priority order with
/// no priorities), O(log n) per changed child, seek to a bound and walk k entries either way in
/// O(log n + k). Copying it is O(1) (structural sharing), so one index serves many views.
///
/// Under key order the index is the location's own children map (no extra memory, O(1) to
/// build).
///
/// Contract: the index must describe exactly the location it was built from plus every change
/// passed to `update`; call `update` for every child a write may have changed (whatever the
/// change: the entries hold the children's nodes).
public struct ChildIndex: Sendable {
    public let order: QueryOrder

    enum Storage: Sendable {
        case keys(ChildMap)
        case entries(SortedTree<IndexEntry, Node>)
    }

    var storage: Storage

    public init(order: QueryOrder, location: Node) {
        self.order = order
        let children = location.children
        if case .key = order {
            storage = .keys(children)
            return
        }
        var entries: [IndexEntry] = []
        var nodes: [Node] = []
        entries.reserveCapacity(children.count)
        nodes.reserveCapacity(children.count)
        var sorted = true
        for (key, child) in children {
            let entry = IndexEntry(order.indexValue(of: child), key)
            if sorted, let last = entries.last, IndexEntry.compare(last, entry) >= 0 { sorted = false }
            entries.append(entry)
            nodes.append(child)
        }
        if sorted {
            storage = .entries(SortedTree(sortedUniqueEntries: Array(zip(entries, nodes))))
            return
        }
        // Sort a permutation (moving integers is much cheaper than moving entries and nodes),
        // deciding most comparisons by the kind and, for numbers, the double value alone.
        var kinds: [UInt8] = []
        var numbers: [Double] = []
        kinds.reserveCapacity(entries.count)
        numbers.reserveCapacity(entries.count)
        for entry in entries {
            kinds.append(UInt8(entry.value.kindRank))
            if case .number(let n) = entry.value { numbers.append(n.doubleValue) } else { numbers.append(0) }
        }
        let permutation = entries.withUnsafeBufferPointer { buffer in
            kinds.withUnsafeBufferPointer { kinds in
                numbers.withUnsafeBufferPointer { numbers in
                    var permutation = Array(0..<buffer.count)
                    permutation.sort { a, b in
                        if kinds[a] != kinds[b] { return kinds[a] < kinds[b] }
                        if kinds[a] == 3, numbers[a] != numbers[b] { return numbers[a] < numbers[b] }
                        return IndexEntry.compare(buffer[a], buffer[b]) < 0
                    }
                    return permutation
                }
            }
        }
        storage = .entries(SortedTree(sortedUniqueEntries: permutation.map { (entries[$0], nodes[$0]) }))
    }

    /// The number of children.
    public var count: Int {
        switch storage {
        case .keys(let map): return map.count
        case .entries(let tree): return tree.count
        }
    }

    /// Re-files one child after a write (`old`/`new` are the child's nodes; `.empty` = absent).
    /// O(log n).
    public mutating func update(key: Key, from old: Node, to new: Node) {
        switch storage {
        case .keys(var map):
            if new.isEmpty { map.remove(key) } else { map.insert(key, new) }
            storage = .keys(map)
        case .entries(var tree):
            if !old.isEmpty { tree.remove(IndexEntry(order.indexValue(of: old), key)) }
            if !new.isEmpty { tree.insert(IndexEntry(order.indexValue(of: new), key), new) }
            storage = .entries(tree)
        }
    }

    /// Brings the index from `old` to `new` (two states of its location). `changedChildren`: the
    /// keys that may have changed, O(|changedChildren| log n); or nil to find them with
    /// `changedKeys(from:to:)`, O(n) plus O(log n) per changed child (cheaper than rebuilding).
    public mutating func update(from old: Node, to new: Node, changedChildren: [Key]?) {
        if case .keys = storage {
            storage = .keys(new.children)
            return
        }
        let keys = changedChildren ?? ChildIndex.changedKeys(from: old, to: new)
        for key in keys {
            update(key: key, from: old.child(key), to: new.child(key))
        }
    }

    /// The keys of the children that differ (deep equality, priorities included) between two
    /// states of a location, in key order. O(1) when both share their children map; otherwise
    /// a merge walk of both maps.
    public static func changedKeys(from old: Node, to new: Node) -> [Key] {
        let a = old.children
        let b = new.children
        if a.root === b.root { return [] }
        var result: [Key] = []
        var ia = a.makeIterator()
        var ib = b.makeIterator()
        var x = ia.next()
        var y = ib.next()
        while true {
            switch (x, y) {
            case (nil, nil):
                return result
            case (let p?, nil):
                result.append(p.key)
                x = ia.next()
            case (nil, let q?):
                result.append(q.key)
                y = ib.next()
            case (let p?, let q?):
                let c = Key.compare(p.key, q.key)
                if c == 0 {
                    if p.value != q.value { result.append(p.key) }
                    x = ia.next()
                    y = ib.next()
                } else if c < 0 {
                    result.append(p.key)
                    x = ia.next()
                } else {
                    result.append(q.key)
                    y = ib.next()
                }
            }
        }
    }

    /// All keys in index order (O(n); for tests and diagnostics).
    public var orderedKeys: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(count)
        var cursor = makeCursor(from: nil, reversed: false)
        while let entry = cursor.next() { keys.append(entry.key) }
        return keys
    }

    // MARK: Cursors

    /// A cursor positioned at the first entry at or after `bound` (after it when exclusive), or
    /// at the first entry when `bound` is nil; `reversed` walks backwards from the last entry at
    /// or before `bound` (or from the last entry). Bounds are read under this index's order.
    func makeCursor(from bound: QueryBound?, reversed: Bool) -> IndexCursor {
        switch storage {
        case .keys(let map):
            guard let bound else {
                return IndexCursor(keys: reversed ? map.reversedIterator() : map.makeIterator())
            }
            switch bound.key {
            case .min:
                return IndexCursor(keys: reversed ? ChildMap().makeIterator() : map.makeIterator())
            case .max:
                return IndexCursor(keys: reversed ? map.reversedIterator() : ChildMap().makeIterator())
            case .key(let key):
                return IndexCursor(keys: map.iterator(from: key, inclusive: bound.inclusive, reversed: reversed))
            }
        case .entries(let tree):
            guard let bound else {
                return IndexCursor(entries: reversed ? tree.reversedIterator() : tree.makeIterator())
            }
            return IndexCursor(
                entries: tree.iterator(from: IndexEntry(bound), inclusive: bound.inclusive, reversed: reversed))
        }
    }

    /// The entry immediately before (value, key) in index order, if any. O(log n).
    func predecessor(of value: IndexValue, _ key: Key) -> WindowEntry? {
        var cursor = makeCursor(from: QueryBound(value: value, key: .key(key), inclusive: false), reversed: true)
        return cursor.next()
    }
}

/// One child as a window holds it: its sort value, key and node.
struct WindowEntry: Sendable {
    let value: IndexValue
    let key: Key
    let node: Node
}

/// Walks a `ChildIndex` in either direction, yielding (sort value, key, node).
struct IndexCursor {
    // Two optionals rather than an enum, so that advancing mutates the iterator in place.
    var keys: ChildMap.Iterator?
    var entries: SortedTree<IndexEntry, Node>.Iterator?

    init(keys: ChildMap.Iterator) {
        self.keys = keys
        self.entries = nil
    }

    init(entries: SortedTree<IndexEntry, Node>.Iterator) {
        self.keys = nil
        self.entries = entries
    }

    mutating func next() -> WindowEntry? {
        if entries != nil {
            guard let e = entries?.next() else { return nil }
            return WindowEntry(value: e.key.value, key: e.key.key, node: e.value)
        }
        guard let e = keys?.next() else { return nil }
        return WindowEntry(value: .null, key: e.key, node: e.value)
    }
}
