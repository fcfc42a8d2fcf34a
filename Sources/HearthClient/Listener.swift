internal import HearthCore
import NIOConcurrencyHelpers

/// One registered observer: its query, callbacks, and the window it was last given.
///
/// `@unchecked Sendable`: the `let`s are immutable and Sendable; `active` is guarded by its
/// lock; `window`, `sub` and `syncing` are touched only on the repo's event loop.
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

    /// The last result this listener was given (nil before its first one): after a reconnect
    /// the new initial result is compared with it, so the listener sees only the difference.
    var window: Node?
    /// The server's subscription id on the current connection.
    var sub: Int?
    /// Between a (re)subscribe response and its initial `value` event.
    var syncing = false

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
