import HearthJSON

/// A live query result, one per (location, spec) and shared by its subscribers: it keeps the
/// current window and turns each write into the events of docs/PROTOCOL.md ("Events").
///
/// Events of one write come in the order removed, added, moved, changed (each group in index
/// order; removed by the old order), then one value last. A write that changes nothing in the
/// window raises no events at all, except the value-only cases of docs/PROTOCOL.md ("Events"): for an unfiltered
/// view, the location is or becomes a leaf or empty and its value changed, or the location's own
/// priority changed.
///
/// The view keeps the location node and an index for `spec.order` matching it (the one the
/// caller passes, or a private one it maintains; under key order the location's own children
/// map). Limited views also keep their window (at most `limit` entries); unlimited views read
/// their window off the index when asked.
public struct View: Sendable {
    public let spec: QuerySpec
    /// The location's current node.
    var location: Node
    /// An index for `spec.order` describing `location`.
    var index: ChildIndex
    /// The current window, kept for limited views only.
    var limitedWindow: [QueryEvaluator.Entry]

    public init(spec: QuerySpec, location: Node, index: ChildIndex?) {
        self.spec = spec
        self.location = location
        if let index, index.order == spec.order {
            self.index = index
        } else {
            self.index = ChildIndex(order: spec.order, location: location)
        }
        limitedWindow = spec.limit == nil ? [] : QueryEvaluator.seek(spec, in: self.index)
    }

    /// The windowed children with their sort values, in query order.
    var entries: [QueryEvaluator.Entry] {
        spec.limit == nil ? QueryEvaluator.seek(spec, in: index) : limitedWindow
    }

    /// The windowed children in query order (for tests and for `get`).
    public var window: [(key: Key, node: Node)] {
        entries.map { (key: $0.key, node: $0.node) }
    }

    /// The node a value event stands for: the location for an unfiltered view; `.empty` for a
    /// filtered one (its value is the window; see `writeValue`).
    var valueNode: Node { spec.isUnfiltered ? location : .empty }

    /// `child_added` for each windowed child in order (with its prevKey), then one `value` (also
    /// when the window is empty).
    public func initialEvents() -> [ViewEvent] {
        var events: [ViewEvent] = []
        var prev: Key?
        for entry in entries {
            events.append(ViewEvent(type: .childAdded, key: entry.key, node: entry.node, prevKey: prev))
            prev = entry.key
        }
        events.append(ViewEvent(type: .value, key: nil, node: valueNode, prevKey: nil))
        return events
    }

    /// The current value as JSON. Unfiltered: the location node itself (a leaf, `null`, or an
    /// object with its children in query order and, in export format, the location's
    /// `.priority`). Filtered: the windowed children as an object in query order, without the
    /// location's priority (docs/PROTOCOL.md, "get"), `null` when empty. Children render as `Node.writeJSON` does.
    public func writeValue(into buffer: inout [UInt8], format: Node.Format) {
        if spec.isUnfiltered {
            if case .key = spec.order {
                location.writeJSON(into: &buffer, format: format)
                return
            }
            if location.isLeaf || location.isEmpty {
                location.writeJSON(into: &buffer, format: format)
                return
            }
            var cursor = index.makeCursor(from: nil, reversed: false)
            var first = true
            buffer.append(UInt8(ascii: "{"))
            while let entry = cursor.next() {
                Self.writeMember(entry.key, entry.node, first: &first, into: &buffer, format: format)
            }
            if format == .export, let priority = location.priority {
                JSONWriter.writeLiteral(#",".priority":"#, into: &buffer)
                priority.writeJSON(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
            return
        }
        let window = entries
        if window.isEmpty {
            JSONWriter.writeLiteral("null", into: &buffer)
            return
        }
        var first = true
        buffer.append(UInt8(ascii: "{"))
        for entry in window {
            Self.writeMember(entry.key, entry.node, first: &first, into: &buffer, format: format)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    static func writeMember(
        _ key: Key, _ node: Node, first: inout Bool, into buffer: inout [UInt8], format: Node.Format
    ) {
        if !first { buffer.append(UInt8(ascii: ",")) }
        first = false
        JSONWriter.writeString(key.string, into: &buffer)
        buffer.append(UInt8(ascii: ":"))
        node.writeJSON(into: &buffer, format: format)
    }
}
