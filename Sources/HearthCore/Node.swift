import HearthJSON

/// A leaf's value: boolean, number or string. Strings compare by their code units, never by
/// Unicode canonical equivalence.
public enum LeafValue: Sendable, Equatable {
    case bool(Bool)
    case number(Number)
    case string(String)

    public static func == (a: LeafValue, b: LeafValue) -> Bool {
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8Equals(y)
        default: return false
        }
    }
}

/// A node's priority: a number or a string (docs/PROTOCOL.md, "Values").
public enum Priority: Sendable, Equatable {
    case number(Number)
    case string(String)

    public static func == (a: Priority, b: Priority) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8Equals(y)
        default: return false
        }
    }

    /// Priority order: numbers (numerically) before strings (UTF-16); `nil` (no priority) first.
    public static func compare(_ a: Priority?, _ b: Priority?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case (.number(let x)?, .number(let y)?): return Number.compare(x, y)
        case (.number?, .string?): return -1
        case (.string?, .number?): return 1
        case (.string(let x)?, .string(let y)?): return compareUTF16(x, y)
        }
    }
}

/// The children of an object node, in key order.
public typealias ChildMap = SortedTree<Key, Node>

/// A node of the JSON tree: empty, a leaf, or a non-empty object; leaves and objects may carry a
/// priority. Copies share structure, so a copy of the root is an O(1) snapshot that later
/// changes (`set(_:to:)` in place, `setting(_:to:)` by copying the path) never disturb.
public struct Node: Sendable {
    public enum Content: Sendable {
        case leaf(LeafValue)
        case children(ChildMap)
    }

    /// What the node holds. Priorities are rare, so a node with one keeps it, with its content,
    /// in a box of its own: a node without one is then 18 bytes instead of 41, which makes every
    /// entry of the tree (`ChildMap.Branch`) a smaller allocation.
    @usableFromInline enum Storage: Sendable {
        case leaf(LeafValue)
        case children(ChildMap)
        case prioritized(Prioritized)
    }

    /// A node's content and priority, when it has a priority.
    @usableFromInline final class Prioritized: Sendable {
        @usableFromInline let content: Content
        @usableFromInline let priority: Priority

        init(_ content: Content, _ priority: Priority) {
            self.content = content
            self.priority = priority
        }
    }

    @usableFromInline var storage: Storage

    /// The empty node (JSON null, "does not exist").
    /// (Computed: it is an empty map and no priority, cheaper to make than a global's lazy
    /// initialization is to check.)
    @inlinable public static var empty: Node { Node(storage: .children(ChildMap())) }

    @inlinable init(storage: Storage) { self.storage = storage }

    init(content: Content, priority: Priority?) {
        if let priority {
            storage = .prioritized(Prioritized(content, priority))
        } else {
            switch content {
            case .leaf(let value): storage = .leaf(value)
            case .children(let children): storage = .children(children)
            }
        }
    }

    /// A leaf value or children.
    @inlinable public var content: Content {
        switch storage {
        case .leaf(let value): .leaf(value)
        case .children(let children): .children(children)
        case .prioritized(let box): box.content
        }
    }

    /// The node's priority, if it has one.
    @inlinable public var priority: Priority? {
        if case .prioritized(let box) = storage { box.priority } else { nil }
    }

    /// A leaf, with an optional priority.
    public static func leaf(_ value: LeafValue, priority: Priority? = nil) -> Node {
        Node(content: .leaf(value), priority: priority)
    }

    /// An object from its children; empty children are dropped, and no children means empty.
    public static func object(_ children: ChildMap, priority: Priority? = nil) -> Node {
        children.isEmpty ? .empty : Node(content: .children(children), priority: priority)
    }

    // The accessors below switch on `storage` rather than build a `content` (a copy of the
    // children's map, retained and released): they are on every walk of the tree.

    public var isEmpty: Bool {
        switch storage {
        case .children(let c): return c.isEmpty
        case .leaf: return false
        case .prioritized(let box):
            if case .children(let c) = box.content { return c.isEmpty }
            return false
        }
    }

    public var isLeaf: Bool {
        switch storage {
        case .leaf: return true
        case .children: return false
        case .prioritized(let box):
            if case .leaf = box.content { return true }
            return false
        }
    }

    /// The leaf value, when this is a leaf.
    public var leafValue: LeafValue? {
        if case .leaf(let v) = content { return v }
        return nil
    }

    /// The children (empty for leaves and the empty node).
    public var children: ChildMap {
        if case .children(let c) = content { return c }
        return ChildMap()
    }

    public var childCount: Int { children.count }

    /// The child named `key`; empty when absent or when this is a leaf.
    public func child(_ key: Key) -> Node {
        switch storage {
        case .children(let c): return c[key] ?? .empty
        case .leaf: return .empty
        case .prioritized(let box):
            if case .children(let c) = box.content { return c[key] ?? .empty }
            return .empty
        }
    }

    /// The descendant at `path`; empty when any step is absent or a leaf.
    public func child(at path: Path) -> Node {
        var node = self
        for key in path.segments {
            node = node.child(key)
            if node.isEmpty { return .empty }
        }
        return node
    }

    /// This node with its priority replaced (dropped on the empty node, which cannot carry one).
    public func withPriority(_ priority: Priority?) -> Node {
        isEmpty ? self : Node(content: content, priority: priority)
    }

    /// This node with the child `key` replaced by `child` (docs/PROTOCOL.md, "Values"): an empty child is
    /// removed and an object left without children becomes empty (losing its priority); a
    /// non-empty child written below a leaf turns it into an object that keeps the priority.
    public func settingChild(_ key: Key, _ child: Node) -> Node {
        switch content {
        case .leaf:
            if child.isEmpty { return self }
            return Node(content: .children(ChildMap().inserting(key, child)), priority: priority)
        case .children(let map):
            if child.isEmpty {
                guard map[key] != nil else { return self }
                let rest = map.removing(key)
                return rest.isEmpty ? .empty : Node(content: .children(rest), priority: priority)
            }
            return Node(content: .children(map.inserting(key, child)), priority: priority)
        }
    }

    /// This node with the descendant at `path` replaced by `node`; a last segment `.priority`
    /// sets the priority of its parent instead.
    public func setting(_ path: Path, to node: Node) -> Node {
        setting(path.segments[...], to: node)
    }

    /// Replaces the descendant at `path` with `node`, as `setting(_:to:)` does, changing in place
    /// the objects on the way that no copy of this node shares (copies taken before stay as they
    /// were). A non-empty value written where the path exists changes one entry per level;
    /// anything else (a new key, a removal, a priority) copies from the level where it happens.
    public mutating func set(_ path: Path, to node: Node) {
        set(path.segments[...], to: node)
    }

    mutating func set(_ segments: ArraySlice<Key>, to node: Node) {
        // A non-empty node set where the path exists changes one entry per level in place (its
        // objects keep their keys; a priority path's last level, the parent's priority, is set by
        // `setting`). A removal may remove keys and empty their objects: it copies.
        if !node.isEmpty {
            _ = set(segments, from: segments.startIndex, toNonEmpty: node, findingUndoPoint: false)
        } else {
            self = setting(segments, to: node)
        }
    }

    /// Where a write that sets a non-empty value at `path` (not a priority) is undone from, in
    /// this tree as it is before the write: the old node of the highest ancestor that the write
    /// turns from a leaf into an object, else the old node at `path` (empty where there was
    /// none). Setting that node back at that path undoes the write exactly.
    public func undoPoint(ofNonEmptySetAt path: Path) -> (path: Path, before: Node) {
        Self.undoPoint(in: path, undoPoint(ofNonEmptySetAt: path.segments[...]))
    }

    /// `set(_:to:)` for a non-empty `node` at `path` (not a priority), which returns the write's
    /// undo point (`undoPoint(ofNonEmptySetAt:)` of the tree before it), found on the way down
    /// rather than by a walk of its own.
    public mutating func set(_ path: Path, toNonEmpty node: Node) -> (path: Path, before: Node) {
        Self.undoPoint(in: path, set(path.segments[...], from: 0, toNonEmpty: node, findingUndoPoint: true))
    }

    /// An undo point of a write at `path` as its depth (`path.count`: the path itself) and node.
    private static func undoPoint(in path: Path, _ point: (depth: Int, before: Node)) -> (path: Path, before: Node) {
        point.depth == path.count ? (path, point.before) : (Path(Array(path.segments[..<point.depth])), point.before)
    }

    /// The depth is an index of the whole path (`segments` is a slice of it).
    private func undoPoint(ofNonEmptySetAt segments: ArraySlice<Key>) -> (depth: Int, before: Node) {
        var old = self
        for depth in segments.indices {
            if old.isEmpty { return (segments.endIndex, .empty) }
            if old.isLeaf { return (depth, old) }
            old = old.child(segments[depth])
        }
        return (segments.endIndex, old)
    }

    /// Sets `node` at `segments[index...]` below this node. Each object on the way that no
    /// snapshot shares, and that has the next key, changes in place: the descent holds the
    /// entry of the next key (`SortedTree.withUniqueBranch(holding:_:)`) and goes on in its value. From
    /// the first level where that fails, the rest of the path is copied (`setting`); the undo
    /// point is looked up there only when `findingUndoPoint` (a plain `set` has no use for it).
    /// (One index into one slice rather than a slice per level: no array retained per level.)
    private mutating func set(
        _ segments: ArraySlice<Key>, from index: Int, toNonEmpty node: Node, findingUndoPoint: Bool
    ) -> (depth: Int, before: Node) {
        guard index < segments.endIndex else {
            let before = self
            self = node
            return (index, before)
        }
        if case .children(var map) = storage {
            storage = .leaf(.bool(false))  // lets go of this node's reference, so `map` may own its branches
            defer { storage = .children(map) }
            let done = map.withUniqueBranch(holding: segments[index]) { entry in
                entry.value.set(segments, from: index + 1, toNonEmpty: node, findingUndoPoint: findingUndoPoint)
            }
            if let done { return done }
        }
        let rest = segments[index...]
        let point = findingUndoPoint ? undoPoint(ofNonEmptySetAt: rest) : (index, Node.empty)
        self = setting(rest, to: node)
        return point
    }

    func setting(_ segments: ArraySlice<Key>, to node: Node) -> Node {
        guard let first = segments.first else { return node }
        if segments.count == 1, first == Key.priority {
            return withPriority(node.asPriority)
        }
        let rest = segments.dropFirst()
        if node.isEmpty, isEmpty { return self }
        return settingChild(first, child(first).setting(rest, to: node))
    }

    /// This node read as a priority (a string or number leaf), else nil.
    public var asPriority: Priority? {
        switch leafValue {
        case .number(let n)?: return .number(n)
        case .string(let s)?: return .string(s)
        default: return nil
        }
    }
}

extension Node: Equatable {
    /// Deep equality: values, children and priorities; numbers compare numerically.
    public static func == (a: Node, b: Node) -> Bool { a.equals(b, comparingPriorities: true) }

    /// Deep equality of the values alone, priorities ignored at every level: whether a reader of
    /// the plain format (no priorities) would see any difference.
    public func hasSameValue(as other: Node) -> Bool { equals(other, comparingPriorities: false) }

    private func equals(_ other: Node, comparingPriorities: Bool) -> Bool {
        if comparingPriorities, priority != other.priority { return false }
        switch (content, other.content) {
        case (.leaf(let x), .leaf(let y)): return x == y
        case (.children(let x), .children(let y)):
            if x.root === y.root { return true }
            guard x.count == y.count else { return false }
            var ix = x.makeIterator()
            var iy = y.makeIterator()
            while let ex = ix.next(), let ey = iy.next() {
                guard ex.key == ey.key, ex.value.equals(ey.value, comparingPriorities: comparingPriorities) else {
                    return false
                }
            }
            return true
        default: return false
        }
    }
}

extension Node {
    /// A constant-time check that two nodes are certainly equal: the same children storage, or
    /// equal leaves, with equal priorities. False means "maybe different".
    public func isIdentical(to other: Node) -> Bool {
        guard priority == other.priority else { return false }
        switch (content, other.content) {
        case (.leaf(let x), .leaf(let y)): return x == y
        case (.children(let x), .children(let y)): return x.root === y.root
        default: return false
        }
    }
}
