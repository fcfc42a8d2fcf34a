extension View {
    /// Applies the new state of the location and returns the events it raises (semantics §4.3).
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
    /// Cost with `changedChildren` of size c: unlimited views O(c log n) (membership and prevKey
    /// per changed child, via the index); limited views O(c + log n + limit) (the window is
    /// re-sought and diffed against the previous one). Comparing a changed child's old and new
    /// nodes adds the cost of deep equality for children that were rewritten but are equal.
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
                events = limitedEvents(keys: keys)
            }
        }

        var raisesValue = !events.isEmpty
        if spec.isUnfiltered, !raisesValue {
            // §4.3 step 4: a leaf or empty location whose value changed; the location's priority.
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
        seen.reserveCapacity(keys.count)
        for key in keys where seen.insert(key).inserted {
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
        for c in sorted(removed) { events.append(ViewEvent(type: .childRemoved, key: c.key, node: c.node, prevKey: nil)) }
        for c in sorted(added) { events.append(ViewEvent(type: .childAdded, key: c.key, node: c.node, prevKey: c.prevKey)) }
        for c in sorted(moved) { events.append(ViewEvent(type: .childMoved, key: c.key, node: c.node, prevKey: c.prevKey)) }
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

    /// Events of a limited view: re-seek the window (O(log n + limit)) and diff it against the
    /// previous one; only children in `keys` can have changed in place.
    private mutating func limitedEvents(keys: [Key]) -> [ViewEvent] {
        let oldWindow = limitedWindow
        let newWindow = QueryEvaluator.seek(spec, in: index)
        limitedWindow = newWindow

        var oldPositions: [Key: Int] = [:]
        oldPositions.reserveCapacity(oldWindow.count)
        for (i, entry) in oldWindow.enumerated() { oldPositions[entry.key] = i }
        var newKeys = Set<Key>()
        newKeys.reserveCapacity(newWindow.count)
        for entry in newWindow { newKeys.insert(entry.key) }
        let touched = Set(keys)

        var events: [ViewEvent] = []
        for entry in oldWindow where !newKeys.contains(entry.key) {
            events.append(ViewEvent(type: .childRemoved, key: entry.key, node: entry.node, prevKey: nil))
        }
        var moved: [ViewEvent] = []
        var changed: [ViewEvent] = []
        var prev: Key?
        for entry in newWindow {
            defer { prev = entry.key }
            guard let i = oldPositions[entry.key] else {
                events.append(ViewEvent(type: .childAdded, key: entry.key, node: entry.node, prevKey: prev))
                continue
            }
            guard touched.contains(entry.key) else { continue }
            let before = oldWindow[i].node
            if before == entry.node { continue }
            if spec.order.sortValueChanged(from: before, to: entry.node) {
                moved.append(ViewEvent(type: .childMoved, key: entry.key, node: entry.node, prevKey: prev))
            }
            changed.append(ViewEvent(type: .childChanged, key: entry.key, node: entry.node, prevKey: prev))
        }
        events.append(contentsOf: moved)
        events.append(contentsOf: changed)
        return events
    }
}
