/// A type with a total order given by a three-way comparison (negative, zero, positive).
public protocol ThreeWayComparable: Sendable {
    static func compare(_ lhs: Self, _ rhs: Self) -> Int
}

extension Key: ThreeWayComparable {}

/// A persistent (structurally shared) ordered map: an AVL tree of branches that copies share.
///
/// Inserting or removing copies only the O(log n) nodes on the path, so a copy of the map is an
/// O(1) snapshot that later writes never disturb, and any thread may read it. Each node also
/// records its subtree size, which gives O(1) `count` and O(log n) rank queries.
///
/// `withUniqueBranch(holding:_:)` finds an entry whose value may change in place, when no other map (a
/// snapshot) shares a branch on its way: the way a burst of writes to the same places allocates
/// nothing rather than a path per write.
public struct SortedTree<K: ThreeWayComparable, V: Sendable>: Sendable {
    /// One entry and its subtrees. `value` changes only in a branch that `withUniqueBranch(holding:_:)`
    /// hands its body: one reached through branches that were each the only reference to the next
    /// (`isKnownUniquelyReferenced`), starting from a map the caller owns. No other map, snapshot
    /// or thread can reach such a branch, so changing it is still safe. (The same argument as the
    /// standard library's copy-on-write buffers; exclusivity is then guaranteed by that ownership,
    /// so the dynamic checks are off.) `left` and `right` never change: they are variables only
    /// so that their uniqueness can be checked.
    @usableFromInline final class Branch: @unchecked Sendable {
        @usableFromInline let key: K
        @exclusivity(unchecked) @usableFromInline var value: V
        @exclusivity(unchecked) @usableFromInline var left: Branch?
        @exclusivity(unchecked) @usableFromInline var right: Branch?
        @usableFromInline let height: Int32
        /// The subtree's size, in 32 bits so that it packs with `height` (one entry per branch:
        /// its size is the tree's memory per entry).
        @usableFromInline let storedCount: UInt32

        @inlinable var count: Int { Int(storedCount) }

        @inlinable init(_ key: K, _ value: V, _ left: Branch?, _ right: Branch?) {
            self.key = key
            self.value = value
            self.left = left
            self.right = right
            self.height = Swift.max(left?.height ?? 0, right?.height ?? 0) + 1
            self.storedCount = (left?.storedCount ?? 0) + (right?.storedCount ?? 0) + 1
        }
    }

    @usableFromInline var root: Branch?

    public init() { root = nil }

    @inlinable init(root: Branch?) { self.root = root }

    /// Builds a map from entries already sorted by key with no duplicates, in O(n).
    public init(sortedUniqueEntries entries: [(K, V)]) {
        func build(_ lo: Int, _ hi: Int) -> Branch? {
            guard lo < hi else { return nil }
            let mid = (lo + hi) / 2
            return Branch(entries[mid].0, entries[mid].1, build(lo, mid), build(mid + 1, hi))
        }
        root = build(0, entries.count)
    }

    public var count: Int { root?.count ?? 0 }
    public var isEmpty: Bool { root == nil }

    /// The value stored under `key`.
    ///
    /// The descent holds no reference of its own to the branches it passes: `self` keeps the root,
    /// and with it every branch, alive for the whole call, so the walk borrows them and skips a
    /// retain and a release per level (the hottest path of reads, writes and rule checks).
    @inlinable public subscript(key: K) -> V? {
        guard let root else { return nil }
        return withExtendedLifetime(root) {
            var branch = Unmanaged.passUnretained(root)
            while true {
                let step: (found: Bool, value: V?, next: Unmanaged<Branch>?) = branch._withUnsafeGuaranteedRef { n in
                    let c = K.compare(key, n.key)
                    if c == 0 { return (true, n.value, nil) }
                    let next = c < 0 ? n.left : n.right
                    return (false, nil, next.map { Unmanaged.passUnretained($0) })
                }
                if step.found { return step.value }
                guard let next = step.next else { return nil }
                branch = next
            }
        }
    }

    /// A map with `value` stored under `key` (replacing any previous value).
    public func inserting(_ key: K, _ value: V) -> SortedTree {
        SortedTree(root: Self.insert(root, key, value))
    }

    /// A map without `key` (unchanged when absent).
    public func removing(_ key: K) -> SortedTree {
        SortedTree(root: Self.remove(root, key))
    }

    public mutating func insert(_ key: K, _ value: V) { root = Self.insert(root, key, value) }

    /// Calls `body` with the branch holding `key`, when this map holds it and shares no branch on
    /// the way to it with another map (its root included), and returns its result; nil (and
    /// `body` not called) otherwise. The branch's value may then change in place (see `Branch`):
    /// no snapshot can reach it.
    ///
    /// Nothing on the way is retained, the found branch included (each is held by its parent, or
    /// by this map, and nothing changes the tree's shape meanwhile), so an in-place write pays no
    /// reference counting per level.
    @inlinable mutating func withUniqueBranch<R>(holding key: K, _ body: (Branch) -> R) -> R? {
        guard isKnownUniquelyReferenced(&root), root != nil else { return nil }
        var branch = Unmanaged.passUnretained(root.unsafelyUnwrapped)
        while true {
            let step = branch._withUnsafeGuaranteedRef { branch -> Step in
                let c = K.compare(key, branch.key)
                if c == 0 { return .found }
                if c < 0 {
                    guard isKnownUniquelyReferenced(&branch.left), let next = branch.left else { return .shared }
                    return .next(Unmanaged.passUnretained(next))
                }
                guard isKnownUniquelyReferenced(&branch.right), let next = branch.right else { return .shared }
                return .next(Unmanaged.passUnretained(next))
            }
            switch step {
            case .found: return branch._withUnsafeGuaranteedRef(body)
            case .shared: return nil
            case .next(let next): branch = next
            }
        }
    }

    /// One level of `withUniqueBranch(holding:_:)`'s descent.
    @usableFromInline enum Step {
        case found
        case shared
        case next(Unmanaged<Branch>)
    }

    public mutating func remove(_ key: K) { root = Self.remove(root, key) }

    public var first: (key: K, value: V)? {
        var node = root
        while let n = node {
            if n.left == nil { return (n.key, n.value) }
            node = n.left
        }
        return nil
    }

    public var last: (key: K, value: V)? {
        var node = root
        while let n = node {
            if n.right == nil { return (n.key, n.value) }
            node = n.right
        }
        return nil
    }

    /// The number of keys strictly less than `key`.
    public func rank(of key: K) -> Int {
        var node = root
        var rank = 0
        while let n = node {
            let c = K.compare(key, n.key)
            if c <= 0 {
                node = n.left
            } else {
                rank += (n.left?.count ?? 0) + 1
                node = n.right
            }
        }
        return rank
    }

    // MARK: AVL internals

    @usableFromInline static func height(_ n: Branch?) -> Int32 { n?.height ?? 0 }

    static func balance(_ key: K, _ value: V, _ l: Branch?, _ r: Branch?) -> Branch {
        let hl = height(l)
        let hr = height(r)
        if hl > hr + 1, let l {
            if height(l.left) >= height(l.right) {
                return Branch(l.key, l.value, l.left, Branch(key, value, l.right, r))
            }
            let lr = l.right!  // height(l.right) > height(l.left) >= 0, so it exists
            return Branch(
                lr.key, lr.value, Branch(l.key, l.value, l.left, lr.left),
                Branch(key, value, lr.right, r))
        }
        if hr > hl + 1, let r {
            if height(r.right) >= height(r.left) {
                return Branch(r.key, r.value, Branch(key, value, l, r.left), r.right)
            }
            let rl = r.left!  // height(r.left) > height(r.right) >= 0, so it exists
            return Branch(
                rl.key, rl.value, Branch(key, value, l, rl.left),
                Branch(r.key, r.value, rl.right, r.right))
        }
        return Branch(key, value, l, r)
    }

    static func insert(_ node: Branch?, _ key: K, _ value: V) -> Branch {
        guard let n = node else { return Branch(key, value, nil, nil) }
        let c = K.compare(key, n.key)
        if c == 0 { return Branch(key, value, n.left, n.right) }
        if c < 0 { return balance(n.key, n.value, insert(n.left, key, value), n.right) }
        return balance(n.key, n.value, n.left, insert(n.right, key, value))
    }

    static func remove(_ node: Branch?, _ key: K) -> Branch? {
        guard let n = node else { return nil }
        let c = K.compare(key, n.key)
        if c < 0 {
            let l = remove(n.left, key)
            if l === n.left { return n }
            return balance(n.key, n.value, l, n.right)
        }
        if c > 0 {
            let r = remove(n.right, key)
            if r === n.right { return n }
            return balance(n.key, n.value, n.left, r)
        }
        guard let l = n.left else { return n.right }
        guard let r = n.right else { return l }
        let (minKey, minValue, rest) = removeMin(r)
        return balance(minKey, minValue, l, rest)
    }

    static func removeMin(_ n: Branch) -> (K, V, Branch?) {
        guard let l = n.left else { return (n.key, n.value, n.right) }
        let (k, v, rest) = removeMin(l)
        return (k, v, balance(n.key, n.value, rest, n.right))
    }
}

// MARK: Iteration

extension SortedTree: Sequence {
    /// In-order iteration, optionally starting from a position and in either direction.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var stack: [Branch] = []
        @usableFromInline let reversed: Bool

        @inlinable init(root: Branch?, reversed: Bool) {
            self.reversed = reversed
            stack.reserveCapacity(Int(root?.height ?? 0))
            var node = root
            while let n = node {
                stack.append(n)
                node = reversed ? n.right : n.left
            }
        }

        /// Positions the iterator at the first key `>= bound` (forward) or the last key
        /// `<= bound` (reversed); `inclusive: false` makes the bound strict.
        init(root: Branch?, seek bound: K, inclusive: Bool, reversed: Bool) {
            self.reversed = reversed
            var node = root
            while let n = node {
                let c = K.compare(n.key, bound)
                let qualifies = reversed ? (c < 0 || (inclusive && c == 0)) : (c > 0 || (inclusive && c == 0))
                if qualifies {
                    stack.append(n)
                    node = reversed ? n.right : n.left
                } else {
                    node = reversed ? n.left : n.right
                }
            }
        }

        @inlinable public mutating func next() -> (key: K, value: V)? {
            guard let n = stack.popLast() else { return nil }
            var node = reversed ? n.left : n.right
            while let m = node {
                stack.append(m)
                node = reversed ? m.right : m.left
            }
            return (n.key, n.value)
        }
    }

    public func makeIterator() -> Iterator { Iterator(root: root, reversed: false) }

    /// Iterates from the last key down to the first.
    public func reversedIterator() -> Iterator { Iterator(root: root, reversed: true) }

    /// Iterates forward from the first key at or after `bound` (after, when not inclusive), or
    /// backward from the last key at or before it when `reversed`.
    public func iterator(from bound: K, inclusive: Bool = true, reversed: Bool = false) -> Iterator {
        Iterator(root: root, seek: bound, inclusive: inclusive, reversed: reversed)
    }

    public var underestimatedCount: Int { count }
}

extension SortedTree {
    /// All keys in order.
    public var keys: [K] { map(\.key) }
}
