extension View {
    /// Applies the new state of the location and returns the events it raises (docs/PROTOCOL.md, "Events").
    ///
    /// - Parameters:
    ///   - location: the location's node after the write.
    ///   - changedChildren: the keys of the location's children that the write may have changed
    ///     (duplicates allowed), or nil when unknown (a write at or above the location): then
    ///     every child is compared (a merge walk of both children maps; O(1) when the write
    ///     left the children map itself untouched, e.g. a priority change of the location).
    ///   - index: the already-updated index for `spec.order` at this location, or nil (the view
    ///     then updates its own).
    ///
    /// Cost with `changedChildren` of size c (never a scan of the location): unlimited views
    /// O(c log n) (membership and prevKey of each changed child, via the index); limited views
    /// O(c log n) when no changed child is, was or becomes part of the window, otherwise
    /// O(c log n + limit) (the window is re-sought and diffed against the previous one).
    /// Comparing a changed child's old and new nodes adds the cost of deep equality for
    /// children that were rewritten with equal content. With `changedChildren == nil`, add the
    /// O(n) merge walk that finds the changed children.
    public mutating func apply(location new: Node, changedChildren: [Key]?, index: ChildIndex?) -> [ViewEvent] {
        let old = location
        let keys: [Key]
        if old.children.root === new.children.root {
            keys = []
        } else if let changedChildren, old.isLeaf == new.isLeaf {
            keys = changedChildren
        } else {
            keys = ChildIndex.changedKeys(from: old, to: new)
        }

        if let index, index.order == spec.order {
            self.index = index
        } else if !keys.isEmpty || old.isLeaf != new.isLeaf {
            self.index.update(from: old, to: new, changedChildren: keys)
        }
        location = new

        var events: [ViewEvent] = []
        if !keys.isEmpty {
            if spec.limit == nil {
                events = unlimitedEvents(old: old, new: new, keys: keys)
            } else {
                events = limitedEvents(old: old, new: new, keys: keys)
            }
        }

        var raisesValue = !events.isEmpty
        if spec.isUnfiltered, !raisesValue {
            // The value-only cases (docs/PROTOCOL.md, "Events"): a leaf or empty location whose value
            // changed; the location's priority.
            if (new.isLeaf || new.isEmpty) && new != old { raisesValue = true }
            if old.priority != new.priority { raisesValue = true }
        }
        if raisesValue {
            events.append(ViewEvent(type: .value, key: nil, node: valueNode, prevKey: nil))
        }
        return events
    }

    /// A pending child event with the position it is sorted by.
    private struct Change {
        let value: IndexValue
        let key: Key
        let node: Node
        var prevKey: Key?
    }

    /// Events of an unlimited view: the window is every child in range, so membership of each
    /// changed child follows from its own old and new sort values, and its prevKey is its
    /// predecessor in the index when that one is in range too.
    private func unlimitedEvents(old: Node, new: Node, keys: [Key]) -> [ViewEvent] {
        var removed: [Change] = []
        var added: [Change] = []
        var moved: [Change] = []
        var changed: [Change] = []
        var seen = Set<Key>()
        if keys.count > 1 { seen.reserveCapacity(keys.count) }
        for key in keys where keys.count == 1 || seen.insert(key).inserted {
            let before = old.child(key)
            let after = new.child(key)
            if before == after { continue }
            let beforeValue = before.isEmpty ? IndexValue.null : spec.order.indexValue(of: before)
            let afterValue = after.isEmpty ? IndexValue.null : spec.order.indexValue(of: after)
            let wasIn = !before.isEmpty && spec.isInRange(beforeValue, key)
            let isIn = !after.isEmpty && spec.isInRange(afterValue, key)
            switch (wasIn, isIn) {
            case (true, false):
                removed.append(Change(value: beforeValue, key: key, node: before, prevKey: nil))
            case (false, true):
                added.append(Change(value: afterValue, key: key, node: after, prevKey: prevKey(afterValue, key)))
            case (true, true):
                let change = Change(value: afterValue, key: key, node: after, prevKey: prevKey(afterValue, key))
                if spec.order.sortValueChanged(from: before, to: after) { moved.append(change) }
                changed.append(change)
            case (false, false):
                continue
            }
        }
        let order = spec.order
        func sorted(_ changes: [Change]) -> [Change] {
            changes.count < 2 ? changes : changes.sorted { order.compare(($0.value, $0.key), ($1.value, $1.key)) < 0 }
        }
        var events: [ViewEvent] = []
        events.reserveCapacity(removed.count + added.count + moved.count + changed.count + 1)
        for c in sorted(removed) {
            events.append(ViewEvent(type: .childRemoved, key: c.key, node: c.node, prevKey: nil))
        }
        for c in sorted(added) {
            events.append(ViewEvent(type: .childAdded, key: c.key, node: c.node, prevKey: c.prevKey))
        }
        for c in sorted(moved) {
            events.append(ViewEvent(type: .childMoved, key: c.key, node: c.node, prevKey: c.prevKey))
        }
        for c in sorted(changed) {
            events.append(ViewEvent(type: .childChanged, key: c.key, node: c.node, prevKey: c.prevKey))
        }
        return events
    }

    /// The key before (value, key) in the new window of an unlimited view. O(log n).
    private func prevKey(_ value: IndexValue, _ key: Key) -> Key? {
        guard let previous = index.predecessor(of: value, key),
            spec.isAfterStart(previous.value, previous.key)
        else { return nil }
        return previous.key
    }

    /// Events of a limited view. When no changed child is or was at or inside the window's far
    /// boundary, nothing changed: O(c log n). Otherwise re-seek the window (O(log n + limit)) and
    /// diff it against the previous one: the children not in `keys` kept their nodes and sort
    /// values, so they are matched by a merge walk, and only the changed ones are looked up.
    private mutating func limitedEvents(old: Node, new: Node, keys: [Key]) -> [ViewEvent] {
        if limitedWindowUnaffected(old: old, new: new, keys: keys) { return [] }
        let oldWindow = limitedWindow
        let newWindow = QueryEvaluator.seek(spec, in: index)
        limitedWindow = newWindow

        let keySet: Set<Key>? = keys.count > 8 ? Set(keys) : nil
        func isTouched(_ key: Key) -> Bool { keySet?.contains(key) ?? keys.contains(key) }
        let oldTouched = oldWindow.map { isTouched($0.key) }
        let newTouched = newWindow.map { isTouched($0.key) }

        var removed: [Int] = []  // indices into oldWindow
        var added: [Int] = []  // indices into newWindow
        var kept: [(old: Int, new: Int)] = []  // touched children in both windows

        // Untouched children: both sequences are in the same order; a merge walk pairs them.
        var i = 0
        var j = 0
        while true {
            while i < oldWindow.count, oldTouched[i] { i += 1 }
            while j < newWindow.count, newTouched[j] { j += 1 }
            if i == oldWindow.count, j == newWindow.count { break }
            if i == oldWindow.count {
                added.append(j)
                j += 1
            } else if j == newWindow.count {
                removed.append(i)
                i += 1
            } else {
                let a = oldWindow[i]
                let b = newWindow[j]
                let c = spec.order.compare((a.value, a.key), (b.value, b.key))
                if c == 0 {
                    i += 1
                    j += 1
                } else if c < 0 {
                    removed.append(i)
                    i += 1
                } else {
                    added.append(j)
                    j += 1
                }
            }
        }

        // Touched children: match by key.
        let oldTouchedIndices = oldWindow.indices.filter { oldTouched[$0] }
        let newTouchedIndices = newWindow.indices.filter { newTouched[$0] }
        var oldByKey: [Key: Int]?
        if oldTouchedIndices.count > 8 {
            oldByKey = Dictionary(oldTouchedIndices.map { (oldWindow[$0].key, $0) }, uniquingKeysWith: { a, _ in a })
        }
        var matchedOld = Set<Int>()
        for j in newTouchedIndices {
            let key = newWindow[j].key
            let match = oldByKey.map { $0[key] } ?? oldTouchedIndices.first { oldWindow[$0].key == key }
            if let i = match {
                kept.append((i, j))
                matchedOld.insert(i)
            } else {
                added.append(j)
            }
        }
        for i in oldTouchedIndices where !matchedOld.contains(i) { removed.append(i) }

        var events: [ViewEvent] = []
        func prevKey(_ j: Int) -> Key? { j > 0 ? newWindow[j - 1].key : nil }
        for i in removed.sorted() {
            events.append(ViewEvent(type: .childRemoved, key: oldWindow[i].key, node: oldWindow[i].node, prevKey: nil))
        }
        for j in added.sorted() {
            events.append(
                ViewEvent(type: .childAdded, key: newWindow[j].key, node: newWindow[j].node, prevKey: prevKey(j)))
        }
        var moved: [ViewEvent] = []
        var changed: [ViewEvent] = []
        for (i, j) in kept.sorted(by: { $0.new < $1.new }) {
            let before = oldWindow[i].node
            let after = newWindow[j].node
            if before == after { continue }
            if spec.order.sortValueChanged(from: before, to: after) {
                moved.append(ViewEvent(type: .childMoved, key: newWindow[j].key, node: after, prevKey: prevKey(j)))
            }
            changed.append(ViewEvent(type: .childChanged, key: newWindow[j].key, node: after, prevKey: prevKey(j)))
        }
        events.append(contentsOf: moved)
        events.append(contentsOf: changed)
        return events
    }

    /// Whether no changed child is, was or becomes part of the limited window: each one's old
    /// and new positions are absent, out of range, or beyond the far end of a full window.
    /// O(|keys| log n).
    private func limitedWindowUnaffected(old: Node, new: Node, keys: [Key]) -> Bool {
        guard let limit = spec.limit else { return false }
        let full = limitedWindow.count >= limit.count
        let boundary: WindowEntry?
        let fromStart: Bool
        switch limit {
        case .first:
            boundary = limitedWindow.last
            fromStart = true
        case .last:
            boundary = limitedWindow.first
            fromStart = false
        }
        for key in keys {
            for node in [old.child(key), new.child(key)] where !node.isEmpty {
                let value = spec.order.indexValue(of: node)
                guard spec.isInRange(value, key) else { continue }
                guard full, let boundary else { return false }
                let c = spec.order.compare((value, key), (boundary.value, boundary.key))
                if fromStart ? c <= 0 : c >= 0 { return false }
            }
        }
        return true
    }
}
