/// The kinds of events an observer can listen for.
public enum DataEventType: Int, Sendable, CaseIterable {
    /// A child entered the query's result.
    case childAdded
    /// A child left it.
    case childRemoved
    /// A child in it changed.
    case childChanged
    /// A child's sort value changed (it may have moved).
    case childMoved
    /// The whole result, after every change (and once at first).
    case value

    /// The protocol's name of the event type (`child_added`, …, `value`).
    public var wireName: String {
        switch self {
        case .childAdded: return "child_added"
        case .childRemoved: return "child_removed"
        case .childChanged: return "child_changed"
        case .childMoved: return "child_moved"
        case .value: return "value"
        }
    }

    /// The event type with this protocol name, if any.
    public init?(wireName: String) {
        guard let type = Self.allCases.first(where: { $0.wireName == wireName }) else { return nil }
        self = type
    }
}

/// Identifies an observer, for `removeObserver(withHandle:)`.
public typealias DatabaseHandle = UInt
