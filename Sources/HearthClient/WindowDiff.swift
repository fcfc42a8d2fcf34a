internal import HearthCore

/// One child event computed on the client.
struct ChildEvent {
    let type: DataEventType
    let key: Key
    let node: Node
    let prevKey: Key?
}

/// Compares two results of one query and lists the child events that turn the first into the
/// second, in the server's order (protocol "Events"): every `child_removed` (in the old order),
/// then `child_added`, `child_moved` and `child_changed`, each in the new order.
enum WindowDiff {
    /// The children of a result in the query's order.
    static func ordered(_ node: Node, _ spec: QuerySpec) -> [(key: Key, node: Node)] {
        let children = node.children.map { (key: $0.key, node: $0.value) }
        if case .key = spec.order { return children }
        return
            children
            .map { (value: spec.order.indexValue(of: $0.node), entry: $0) }
            .sorted { spec.order.compare(($0.value, $0.entry.key), ($1.value, $1.entry.key)) < 0 }
            .map(\.entry)
    }

    static func childEvents(from old: Node, to new: Node, spec: QuerySpec) -> [ChildEvent] {
        let oldChildren = ordered(old, spec)
        let newChildren = ordered(new, spec)
        var removed: [ChildEvent] = []
        var added: [ChildEvent] = []
        var moved: [ChildEvent] = []
        var changed: [ChildEvent] = []
        for (key, node) in oldChildren where new.child(key).isEmpty {
            removed.append(ChildEvent(type: .childRemoved, key: key, node: node, prevKey: nil))
        }
        var prev: Key?
        for (key, node) in newChildren {
            defer { prev = key }
            let before = old.child(key)
            if before.isEmpty {
                added.append(ChildEvent(type: .childAdded, key: key, node: node, prevKey: prev))
            } else if before != node {
                if spec.order.sortValueChanged(from: before, to: node) {
                    moved.append(ChildEvent(type: .childMoved, key: key, node: node, prevKey: prev))
                }
                changed.append(ChildEvent(type: .childChanged, key: key, node: node, prevKey: prev))
            }
        }
        return removed + added + moved + changed
    }

    /// What a query selects from `location`: the location itself without bounds and limit,
    /// else the selected children (without the location's priority).
    static func result(of location: Node, _ spec: QuerySpec) -> Node {
        if spec.isUnfiltered { return location }
        let window = QueryEvaluator.window(spec, of: location, index: nil)
        return .object(ChildMap(sortedUniqueEntries: window.map { ($0.key, $0.node) }.sorted { $0.0 < $1.0 }))
    }
}
