import HearthCore
import HearthProtocol

/// Cache-mode subscriptions and resuming them (docs/PROTOCOL.md, "Cache mode and resuming").
extension Engine {
    /// The first event lines of a subscription, and whether they resume from `since`.
    struct InitialEvents {
        var bodies: [[UInt8]]
        var resumed: Bool
    }

    /// The initial events of a cache-mode subscription of `view` at `path`, of the types in
    /// `events`: the changes since `since` when the change log still has every revision after
    /// it (`resumed`), otherwise the whole result without the `value` the client can derive.
    func cacheModeInitial(_ view: View, at path: Path, events: EventMask, since: UInt64?) -> InitialEvents {
        let rev = database.rev
        let location = database.root.child(at: path)
        if let since, changeLog.capacity > 0 {
            if since == rev { return InitialEvents(bodies: [], resumed: true) }
            if changeLog.covers(since: since, current: rev) {
                guard let (old, changedChildren) = changeLog.undo(path, to: since, current: location) else {
                    return InitialEvents(bodies: [], resumed: true)
                }
                var replay = View(spec: view.spec, location: old, index: nil)
                let changes = Self.placingInOrder(
                    replay.apply(location: location, changedChildren: changedChildren, index: nil), window: replay)
                let bodies = Self.encode(
                    changes, of: replay, events: events, rev: rev,
                    sendsValue: ViewRegistry.cacheModeValue(spec: view.spec, old: old, new: location))
                return InitialEvents(bodies: bodies, resumed: true)
            }
        }
        // A whole result is the change from nothing to the location.
        let bodies = Self.encode(
            view.initialEvents(), of: view, events: events, rev: rev,
            sendsValue: ViewRegistry.cacheModeValue(spec: view.spec, old: .empty, new: location))
        return InitialEvents(bodies: bodies, resumed: false)
    }

    /// The event lines of `changes` of the types in `events`, the `value` (of `view`) only when
    /// `sendsValue` (the cache-mode rule).
    private static func encode(
        _ changes: [ViewEvent], of view: View, events: EventMask, rev: UInt64, sendsValue: Bool
    ) -> [[UInt8]] {
        var bodies: [[UInt8]] = []
        for event in changes where events.contains(event.type) {
            if event.type == .value {
                if sendsValue { bodies.append(EventEncoder.valueEventBody(view, rev: rev)) }
            } else {
                bodies.append(EventEncoder.childEventBody(event, rev: rev))
            }
        }
        return bodies
    }

    /// The events of a resume with its `child_added` and `child_moved` merged into one run in the
    /// result's order (after the `child_removed`, before the `child_changed`), so that a client
    /// that places each child after its `prev` in the order received ends with the result's
    /// order: every `prev` is then in place before it is used. (One write's live events keep the
    /// groups of docs/PROTOCOL.md "Events".)
    static func placingInOrder(_ events: [ViewEvent], window view: View) -> [ViewEvent] {
        let placed = events.filter { $0.type == .childAdded || $0.type == .childMoved }
        guard placed.contains(where: { $0.type == .childAdded }), placed.contains(where: { $0.type == .childMoved })
        else { return events }
        var rank: [Key: Int] = [:]
        for (index, entry) in view.window.enumerated() { rank[entry.key] = index }
        let merged = placed.enumerated().sorted { a, b in
            let x = a.element.key.flatMap { rank[$0] } ?? Int.max
            let y = b.element.key.flatMap { rank[$0] } ?? Int.max
            return x != y ? x < y : a.offset < b.offset
        }.map(\.element)
        return events.filter { $0.type == .childRemoved } + merged
            + events.filter { $0.type != .childRemoved && $0.type != .childAdded && $0.type != .childMoved }
    }
}
