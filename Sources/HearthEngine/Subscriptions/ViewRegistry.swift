import HearthCore
import HearthProtocol
import NIOCore

/// The live views, the indexes they read, and their subscribers, filed in a path trie so that a
/// write finds the views it affects in O(depth + matches). Confined to the engine thread.
///
/// One view per (location, canonical query), shared by all of its subscriptions; one index per
/// (location, order), shared by the views that read it and kept for as long as any does (or
/// forever, for indexes the rules declare).
final class ViewRegistry {
    /// One subscription of one connection.
    struct Subscriber {
        let session: SessionLink
        let sub: Int
        let delivery: Delivery
    }

    /// How a subscription gets its events.
    enum Delivery {
        /// The line protocol's events, of the types asked for; in cache mode (`cache`) `value`
        /// only when child events cannot express the change (`cacheModeValue`).
        case events(EventMask, cache: Bool)
        /// A Firebase event stream (`StreamEvents`): `shapedByWrite` for a stream without a
        /// query.
        case stream(StreamShape)
    }

    struct StreamShape: Hashable {
        let format: Node.Format
        let shapedByWrite: Bool
        /// Firebase realtime-protocol pushes rather than Server-Sent Events.
        let firebase: Bool

        /// How the events of a view at `location` are framed.
        func framing(at location: Path) -> StreamFraming {
            firebase ? .firebase(location: location) : .serverSentEvents
        }
    }

    final class ViewSlot {
        var view: View
        var subscribers: [Subscriber] = []
        /// How many of `subscribers` are streams.
        var streamCount = 0
        init(view: View) { self.view = view }
    }

    final class IndexSlot {
        var index: ChildIndex
        var users = 0
        let declared: Bool
        init(index: ChildIndex, declared: Bool) {
            self.index = index
            self.declared = declared
        }
    }

    final class TrieNode {
        let path: Path
        // Walked on every write (`watches`); touched only on the engine's thread, never while
        // an access is open (see `Engine`'s state).
        @exclusivity(unchecked) var children: [Key: TrieNode] = [:]
        @exclusivity(unchecked) var views: [QuerySpec: ViewSlot] = [:]
        @exclusivity(unchecked) var indexes: [QueryOrder: IndexSlot] = [:]
        init(path: Path) { self.path = path }
        var isUnused: Bool { children.isEmpty && views.isEmpty && indexes.isEmpty }
    }

    private let root = TrieNode(path: .root)
    /// Each connection's subscriptions: sub id → (location, query).
    private var sessions: [UInt64: [Int: (path: Path, query: QuerySpec)]] = [:]
    private var nextSub: [UInt64: Int] = [:]

    /// The number of live views (for metrics and tests).
    private(set) var viewCount = 0
    /// The number of live subscriptions and streams (for metrics).
    private(set) var subscriptionCount = 0

    // MARK: Subscriptions

    /// Adds a subscription and returns its id and its view (for the initial events).
    func subscribe(
        session: SessionLink, path: Path, query: QuerySpec, delivery: Delivery, data: Node, declared: Bool
    ) -> (sub: Int, view: View) {
        let node = trieNodeCreating(at: path)
        let slot: ViewSlot
        if let existing = node.views[query] {
            slot = existing
        } else {
            let location = data.child(at: path)
            let index = acquireIndex(query.order, at: node, location: location, declared: declared)
            slot = ViewSlot(view: View(spec: query, location: location, index: index))
            node.views[query] = slot
            viewCount += 1
        }
        let sub = (nextSub[session.id] ?? 0) + 1
        nextSub[session.id] = sub
        slot.subscribers.append(Subscriber(session: session, sub: sub, delivery: delivery))
        if case .stream = delivery { slot.streamCount += 1 }
        sessions[session.id, default: [:]][sub] = (path, query)
        subscriptionCount += 1
        return (sub, slot.view)
    }

    /// Removes one subscription; false when the connection has no such subscription.
    @discardableResult
    func unsubscribe(session: UInt64, sub: Int) -> Bool {
        guard let (path, query) = sessions[session]?.removeValue(forKey: sub) else { return false }
        subscriptionCount -= 1
        guard let node = trieNode(at: path), let slot = node.views[query] else { return true }
        if let index = slot.subscribers.firstIndex(where: { $0.session.id == session && $0.sub == sub }) {
            if case .stream = slot.subscribers[index].delivery { slot.streamCount -= 1 }
            slot.subscribers.remove(at: index)
        }
        if slot.subscribers.isEmpty {
            node.views[query] = nil
            viewCount -= 1
            releaseIndex(query.order, at: node)
            prune(path)
        }
        return true
    }

    /// Removes every subscription of a connection that went away.
    func removeSession(_ session: UInt64) {
        for sub in sessions[session]?.keys.sorted() ?? [] { unsubscribe(session: session, sub: sub) }
        sessions[session] = nil
        nextSub[session] = nil
    }

    // MARK: Indexes

    /// An existing index for (`path`, `order`), e.g. for a one-shot query.
    func index(for order: QueryOrder, at path: Path) -> ChildIndex? {
        trieNode(at: path)?.indexes[order]?.index
    }

    /// Keeps a declared index at a concrete location from now on.
    func declareIndex(_ order: QueryOrder, at path: Path, data: Node) {
        let node = trieNodeCreating(at: path)
        if node.indexes[order] == nil {
            node.indexes[order] = IndexSlot(
                index: ChildIndex(order: order, location: data.child(at: path)), declared: true)
        }
    }

    private func acquireIndex(_ order: QueryOrder, at node: TrieNode, location: Node, declared: Bool) -> ChildIndex? {
        if case .key = order { return nil }
        let slot: IndexSlot
        if let existing = node.indexes[order] {
            slot = existing
        } else {
            slot = IndexSlot(index: ChildIndex(order: order, location: location), declared: declared)
            node.indexes[order] = slot
        }
        slot.users += 1
        return slot.index
    }

    private func releaseIndex(_ order: QueryOrder, at node: TrieNode) {
        guard let slot = node.indexes[order] else { return }
        slot.users -= 1
        if slot.users == 0, !slot.declared { node.indexes[order] = nil }
    }

    // MARK: Writes

    /// Whether a write to `paths` concerns any view or index (one at, above or below a path):
    /// `apply(write:paths:before:after:rev:batch:)` then needs the tree as it was before it.
    func watches(_ paths: some Collection<Path>) -> Bool {
        func watched(_ node: TrieNode) -> Bool { !node.views.isEmpty || !node.indexes.isEmpty }
        if root.children.isEmpty { return watched(root) }
        return visitNodes(concernedBy: paths) { node, _ in watched(node) }
    }

    /// Visits the trie nodes a write to `paths` concerns: each node on a path, with the key the
    /// path takes below it, then every node under the path's end (key nil), in order. Stops as
    /// soon as `visit` returns true, and returns whether it did.
    @discardableResult
    private func visitNodes(concernedBy paths: some Collection<Path>, _ visit: (TrieNode, Key?) -> Bool) -> Bool {
        func visitSubtree(_ node: TrieNode) -> Bool {
            visit(node, nil) || node.children.values.contains(where: visitSubtree)
        }
        for path in paths {
            var node = root
            var reached = true
            for key in path.segments {
                if visit(node, key) { return true }
                guard let next = node.children[key] else {
                    reached = false
                    break
                }
                node = next
            }
            if reached, visitSubtree(node) { return true }
        }
        return false
    }

    /// The event lines a committed write raises, appended per connection to the batch (as
    /// provisional until the log has the write), deeper views first (docs/PROTOCOL.md, "Events"). Indexes
    /// are brought up to date first. `write` shapes the events of streams without a query (nil
    /// when there is no write to show, as in `resync`).
    func apply(write: Write?, paths: [Path], before: Node, after: Node, rev: UInt64, batch: inout Batch) {
        var affected: [ObjectIdentifier: (node: TrieNode, changed: Set<Key>?)] = [:]
        func mark(_ node: TrieNode, _ key: Key?) {
            guard !node.views.isEmpty || !node.indexes.isEmpty else { return }
            let id = ObjectIdentifier(node)
            if let key {
                if let existing = affected[id] {
                    if existing.changed != nil { affected[id]?.changed?.insert(key) }
                } else {
                    affected[id] = (node, [key])
                }
            } else {
                affected[id] = (node, nil)
            }
        }
        visitNodes(concernedBy: paths) { node, key in
            mark(node, key)
            return false
        }
        guard !affected.isEmpty else { return }

        let ordered = affected.values.sorted { $0.node.path.count > $1.node.path.count }
        for (node, changed) in ordered {
            let old = before.child(at: node.path)
            let new = after.child(at: node.path)
            if old.isIdentical(to: new) { continue }
            let keys = changed.map { Array($0) }
            for slot in node.indexes.values {
                slot.index.update(from: old, to: new, changedChildren: keys)
            }
            for slot in node.views.values {
                let index = node.indexes[slot.view.spec.order]?.index
                let events = slot.view.apply(location: new, changedChildren: keys, index: index)
                guard !events.isEmpty else { continue }
                let cacheValue = Self.cacheModeValue(spec: slot.view.spec, old: old, new: new)
                deliver(events, of: slot, rev: rev, cacheValue: cacheValue, batch: &batch)
                if slot.streamCount > 0, let write {
                    deliverToStreams(
                        events, of: slot, write: write, at: node.path, node: new, rootBefore: before,
                        rootAfter: after, batch: &batch)
                }
            }
        }
    }

    /// Whether a cache-mode subscription gets the `value` event of a change of its location from
    /// `old` to `new` (docs/PROTOCOL.md, "Cache mode and resuming"): only when its child events cannot express it —
    /// an unfiltered query whose location is a leaf before or after, or whose own priority
    /// changed; never a filtered one.
    static func cacheModeValue(spec: QuerySpec, old: Node, new: Node) -> Bool {
        spec.isUnfiltered && (old.isLeaf || new.isLeaf || old.priority != new.priority)
    }

    /// Encodes each event once and hands it to every subscriber that asked for its type, in
    /// registration order (cache-mode subscribers get `value` only when `cacheValue`).
    private func deliver(
        _ events: [ViewEvent], of slot: ViewSlot, rev: UInt64, cacheValue: Bool, batch: inout Batch
    ) {
        let allocator = ByteBufferAllocator()
        for event in events {
            let wanted = slot.subscribers.filter {
                guard case .events(let mask, let cache) = $0.delivery, mask.contains(event.type) else { return false }
                return !cache || event.type != .value || cacheValue
            }
            guard !wanted.isEmpty else { continue }
            let body =
                event.type == .value
                ? EventEncoder.valueEventBody(slot.view, rev: rev) : EventEncoder.childEventBody(event, rev: rev)
            let shared = allocator.buffer(bytes: body)
            for subscriber in wanted {
                batch.appendProvisional(.event(sub: subscriber.sub, body: shared), for: subscriber.session)
            }
        }
    }

    /// Encodes a write's stream events once per stream shape and hands them to each stream of
    /// the view.
    private func deliverToStreams(
        _ events: [ViewEvent], of slot: ViewSlot, write: Write, at location: Path, node new: Node,
        rootBefore: Node, rootAfter: Node, batch: inout Batch
    ) {
        let allocator = ByteBufferAllocator()
        // A view's streams come in one or two shapes: a short list beats hashing for each one.
        var encoded: [(shape: StreamShape, frames: [ByteBuffer])] = []
        for index in slot.subscribers.indices {
            guard case .stream(let shape) = slot.subscribers[index].delivery else { continue }
            let frames: [ByteBuffer]
            if let cached = encoded.first(where: { $0.shape == shape }) {
                frames = cached.frames
            } else {
                let framing = shape.framing(at: location)
                let bytes =
                    shape.shapedByWrite
                    ? StreamEvents.shaped(
                        write, at: location, before: rootBefore, after: rootAfter, format: shape.format,
                        framing: framing)
                    : StreamEvents.windowChange(
                        events, view: slot.view, location: new, format: shape.format, framing: framing)
                frames = bytes.map { allocator.buffer(bytes: $0) }
                encoded.append((shape, frames))
            }
            let sub = slot.subscribers[index].sub
            for frame in frames {
                batch.appendProvisional(.event(sub: sub, body: frame), for: slot.subscribers[index].session)
            }
        }
    }

    // MARK: Trie

    private func trieNode(at path: Path) -> TrieNode? {
        var node = root
        for key in path.segments {
            guard let next = node.children[key] else { return nil }
            node = next
        }
        return node
    }

    private func trieNodeCreating(at path: Path) -> TrieNode {
        var node = root
        for (depth, key) in path.segments.enumerated() {
            if let next = node.children[key] {
                node = next
            } else {
                let next = TrieNode(path: Path(Array(path.segments[...depth])))
                node.children[key] = next
                node = next
            }
        }
        return node
    }

    /// Drops trie nodes left without views, indexes or children along `path`.
    private func prune(_ path: Path) {
        var chain: [TrieNode] = [root]
        for key in path.segments {
            guard let next = chain.last?.children[key] else { return }
            chain.append(next)
        }
        for depth in stride(from: chain.count - 1, through: 1, by: -1) where chain[depth].isUnused {
            chain[depth - 1].children[path.segments[depth - 1]] = nil
        }
    }
}

extension ViewRegistry {
    /// Brings every view and index back to `root` without raising events (after the log
    /// refused writes that the views had already seen).
    func resync(from current: Node, to root: Node, rev: UInt64) {
        var discarded = Batch(rev: 0)
        apply(write: nil, paths: [.root], before: current, after: root, rev: rev, batch: &discarded)
    }
}

extension ViewRegistry {
    /// The window of `query` over the node at `path` of `root`. A declared index is built on
    /// first use and maintained from then on; an undeclared order is evaluated by a scan.
    func window(_ query: QuerySpec, at path: Path, of root: Node, declared: Bool) -> QueryResult {
        let location = root.child(at: path)
        if query.isUnfiltered, location.isLeaf { return .node(location) }
        if declared, index(for: query.order, at: path) == nil {
            declareIndex(query.order, at: path, data: root)
        }
        return .children(
            QueryEvaluator.window(query, of: location, index: index(for: query.order, at: path)),
            priority: query.isUnfiltered ? location.priority : nil)
    }
}
