internal import HearthCore
import NIOConcurrencyHelpers

/// One registered observer: its query and callbacks. Its view (`ClientView`) holds the data.
///
/// `@unchecked Sendable`: the `let`s are immutable and Sendable; `active` is guarded by its
/// lock; `initialized` is touched only on the repo's event loop.
final class Listener: @unchecked Sendable {
    let handle: UInt
    let query: DatabaseQuery
    let path: Path
    let spec: QuerySpec
    let eventType: DataEventType
    /// Removed after its first delivery (`observeSingleEvent`).
    let once: Bool
    let onEvent: @Sendable (DataSnapshot, String?) -> Void
    let onCancel: (@Sendable (any Error) -> Void)?

    private let active = NIOLockedValueBox(true)

    /// Whether it has been given its view's result (its initial events).
    var initialized = false

    init(
        handle: UInt, query: DatabaseQuery, path: Path, spec: QuerySpec, eventType: DataEventType, once: Bool,
        onEvent: @escaping @Sendable (DataSnapshot, String?) -> Void, onCancel: (@Sendable (any Error) -> Void)?
    ) {
        self.handle = handle
        self.query = query
        self.path = path
        self.spec = spec
        self.eventType = eventType
        self.once = once
        self.onEvent = onEvent
        self.onCancel = onCancel
    }

    /// False once removed: callbacks already queued for it are then skipped.
    var isActive: Bool { active.withLockedValue { $0 } }

    func deactivate() { active.withLockedValue { $0 = false } }
}
