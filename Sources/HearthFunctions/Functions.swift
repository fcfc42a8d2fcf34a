import NIOConcurrencyHelpers

/// What a handler receives: the event, with `params` overlaid by its own pattern's wildcards.
public typealias TriggerHandler = @Sendable (TriggerEvent) async throws -> Void

/// What `Functions.dispatch` did with an event.
public enum DispatchOutcome: Sendable, Equatable {
    /// This many handlers ran and returned.
    case handled(Int)
    /// No handler's pattern and kinds matched the event.
    case unmatched
    /// The event's id was in the seen-id window: no handler ran.
    case duplicate
}

/// Handlers of trigger events, registered by path pattern and kind:
///
/// ```swift
/// let functions = Functions()
/// functions.onCreate("/messages/{id}") { event in … }
/// ```
///
/// Delivery is at least once: Hearth sends an event again when it got no 2xx, so the same event
/// (the same `id`) may reach a handler more than once, and handlers must be idempotent. An
/// optional window of recently handled ids (`seenWindow`) drops repeats that reach the same
/// process while their id is still in the window; it is a convenience, not a guarantee (it is
/// in memory, bounded, and empty after a restart).
public final class Functions: Sendable {
    private struct Registration: Sendable {
        var pattern: PathPattern
        var kinds: Set<TriggerKind>
        var handler: TriggerHandler
    }

    private let registrations = NIOLockedValueBox<[Registration]>([])
    private let seen: SeenEventWindow?

    /// Handlers registered later with `onCreate`, `onUpdate`, `onDelete` and `onWrite`.
    /// `seenWindow`: how many handled event ids to remember and skip when they come again
    /// (0: none, every delivery reaches the handlers).
    public init(seenWindow: Int = 0) {
        self.seen = seenWindow > 0 ? SeenEventWindow(capacity: seenWindow) : nil
    }

    /// Runs `handler` for events of kind create at locations matching `pattern`.
    /// An invalid pattern is a programmer error and traps; `PathPattern(_:)` validates one first.
    public func onCreate(_ pattern: String, _ handler: @escaping TriggerHandler) {
        register(pattern, [.create], handler)
    }

    /// Runs `handler` for events of kind update at locations matching `pattern`.
    public func onUpdate(_ pattern: String, _ handler: @escaping TriggerHandler) {
        register(pattern, [.update], handler)
    }

    /// Runs `handler` for events of kind delete at locations matching `pattern`.
    public func onDelete(_ pattern: String, _ handler: @escaping TriggerHandler) {
        register(pattern, [.delete], handler)
    }

    /// Runs `handler` for every event (create, update or delete) at locations matching `pattern`.
    public func onWrite(_ pattern: String, _ handler: @escaping TriggerHandler) {
        register(pattern, Set(TriggerKind.allCases), handler)
    }

    /// Runs `handler` for events of the given kinds at locations matching `pattern`.
    public func on(_ kinds: Set<TriggerKind>, _ pattern: PathPattern, _ handler: @escaping TriggerHandler) {
        registrations.withLockedValue { $0.append(Registration(pattern: pattern, kinds: kinds, handler: handler)) }
    }

    private func register(_ pattern: String, _ kinds: Set<TriggerKind>, _ handler: @escaping TriggerHandler) {
        let parsed: PathPattern
        do {
            parsed = try PathPattern(pattern)
        } catch {
            preconditionFailure(error.description)
        }
        on(kinds, parsed, handler)
    }

    /// Runs, one after the other in the order they were registered, every handler whose kinds
    /// hold the event's kind and whose pattern matches its path. Rethrows the first error a
    /// handler throws (the handlers after it do not run; a retry of the event runs them all
    /// again). With a seen-id window, an event whose id was handled before runs nothing, and an
    /// id enters the window only once all its handlers returned.
    public func dispatch(_ event: TriggerEvent) async throws -> DispatchOutcome {
        if let seen, seen.contains(event.id) { return .duplicate }
        let matching = registrations.withLockedValue { registrations in
            registrations.compactMap { registration -> (TriggerHandler, [String: String])? in
                guard registration.kinds.contains(event.kind),
                    let params = registration.pattern.match(event.path)
                else { return nil }
                return (registration.handler, params)
            }
        }
        for (handler, params) in matching {
            var delivered = event
            delivered.params.merge(params) { _, matched in matched }
            try await handler(delivered)
        }
        seen?.insert(event.id)
        return matching.isEmpty ? .unmatched : .handled(matching.count)
    }
}

/// The ids of the last `capacity` handled events, oldest forgotten first.
final class SeenEventWindow: Sendable {
    private struct State {
        var ids: Set<String> = []
        var order: [String] = []
        var next = 0
    }

    private let capacity: Int
    private let state = NIOLockedValueBox(State())

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
    }

    func contains(_ id: String) -> Bool {
        state.withLockedValue { $0.ids.contains(id) }
    }

    func insert(_ id: String) {
        let capacity = self.capacity
        state.withLockedValue { state in
            guard state.ids.insert(id).inserted else { return }
            if state.order.count < capacity {
                state.order.append(id)
            } else {
                state.ids.remove(state.order[state.next])
                state.order[state.next] = id
                state.next = (state.next + 1) % capacity
            }
        }
    }
}
