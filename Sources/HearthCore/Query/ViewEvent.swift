/// The event types of a subscription (docs/PROTOCOL.md, "Events"), in the order in which the groups of
/// one write are delivered (docs/PROTOCOL.md, "Events": order guarantee 1).
public enum EventType: String, Sendable, CaseIterable {
    case childRemoved = "child_removed"
    case childAdded = "child_added"
    case childMoved = "child_moved"
    case childChanged = "child_changed"
    case value
}

/// One event of a view (docs/PROTOCOL.md, "Events").
///
/// For child events `key` and `node` are the child (for `child_removed` its OLD node) and
/// `prevKey` is the key of the child before it in the NEW window order (nil when it is first;
/// always nil for `child_removed`). For `value`, `key` and `prevKey` are nil and `node` is the
/// location node for an unfiltered view and `.empty` for a filtered one: render the value with
/// `View.writeValue`, which also handles query order.
public struct ViewEvent: Sendable {
    public let type: EventType
    public let key: Key?
    public let node: Node
    public let prevKey: Key?

    public init(type: EventType, key: Key?, node: Node, prevKey: Key?) {
        self.type = type
        self.key = key
        self.node = node
        self.prevKey = prevKey
    }
}
