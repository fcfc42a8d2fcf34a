internal import HearthCore
internal import HearthJSON

extension Repo {
    // MARK: Registration (any thread)

    /// Registers a listener built by `make` with a fresh handle and starts it.
    func addListener(_ make: (UInt) -> Listener) -> UInt {
        let listener = shared.withLockedValue { state -> Listener in
            let listener = make(state.nextHandle)
            state.nextHandle += 1
            state.listeners[listener.handle] = listener
            return listener
        }
        loop.execute {
            if listener.path.isInfo {
                self.refreshInfoListener(listener)
            } else {
                self.subscribe(listener)
            }
        }
        return listener.handle
    }

    /// A handle that names no listener (for observers refused at once).
    func unusedHandle() -> UInt {
        shared.withLockedValue { state in
            defer { state.nextHandle += 1 }
            return state.nextHandle
        }
    }

    /// Removes listeners; no callback of theirs runs after this returns (one already running
    /// on the callback queue aside).
    func removeListeners(where predicate: (Listener) -> Bool) {
        let removed = shared.withLockedValue { state -> [Listener] in
            let matching = state.listeners.values.filter(predicate)
            for listener in matching { state.listeners[listener.handle] = nil }
            return matching
        }
        for listener in removed { listener.deactivate() }
        guard !removed.isEmpty else { return }
        loop.execute {
            for listener in removed { self.unsubscribe(listener) }
        }
    }

    var listenerCount: Int { shared.withLockedValue { $0.listeners.count } }

    func registeredListeners() -> [Listener] {
        shared.withLockedValue { $0.listeners.values.sorted { $0.handle < $1.handle } }
    }

    // MARK: Server subscriptions (on the loop)

    func subscribe(_ listener: Listener) {
        var events: [JSONValue] = [.string("value")]
        if listener.eventType != .value { events.insert(.string(listener.eventType.wireName), at: 0) }
        var body = [
            JSONMember("op", .string("subscribe")), JSONMember("path", .string(listener.path.description)),
            JSONMember("events", .array(events)),
        ]
        if listener.spec != .default { body.append(JSONMember("query", listener.spec.json)) }
        send(.session, body) { result in
            switch result {
            case .success(let response):
                guard let sub = response["sub"]?.int64Value.map(Int.init) else { return }
                guard listener.isActive else {
                    self.send(
                        .session, [JSONMember("op", .string("unsubscribe")), JSONMember("sub", .int(Int64(sub)))]
                    ) { _ in }
                    return
                }
                listener.sub = sub
                listener.syncing = true
                self.subscriptions[sub] = listener
            case .failure(let error):
                self.cancel(listener, error)
            }
        }
    }

    private func unsubscribe(_ listener: Listener) {
        guard let sub = listener.sub else { return }
        listener.sub = nil
        subscriptions[sub] = nil
        send(.session, [JSONMember("op", .string("unsubscribe")), JSONMember("sub", .int(Int64(sub)))]) { _ in }
    }

    /// Ends a listener because the server refused or cancelled it, and tells its cancel block.
    private func cancel(_ listener: Listener, _ error: HearthError) {
        removeListeners { $0 === listener }
        if let onCancel = listener.onCancel {
            callback { onCancel(error) }
        }
    }

    func handleEvent(_ json: JSONValue, sub: Int) {
        guard let listener = subscriptions[sub] else { return }
        let type = json["event"]?.stringValue
        if type == "cancel" {
            // The server has dropped the subscription already: nothing to unsubscribe.
            subscriptions[sub] = nil
            listener.sub = nil
            var error = HearthError(wire: json["error"] ?? .null)
            if error.code == .permissionDenied { error.path = listener.path.description }
            cancel(listener, error)
            return
        }
        let node = ValueConversion.node(fromServer: json["value"] ?? .null)
        if type == "value" {
            let old = listener.window
            listener.window = node
            if listener.syncing {
                // The initial result of a (re)subscription: give only the difference.
                listener.syncing = false
                emitChanges(listener, old: old, new: node)
            } else if listener.eventType == .value {
                deliverValue(listener, node)
            }
            return
        }
        // Initial child events are replaced by the diff computed at the initial `value`.
        guard !listener.syncing, let type, let eventType = DataEventType(wireName: type),
            eventType == listener.eventType, let key = json["key"]?.stringValue
        else { return }
        deliverChild(
            listener,
            ChildEvent(type: eventType, key: Key(key), node: node, prevKey: json["prev"]?.stringValue.map(Key.init)))
    }

    /// Gives `listener` what changed between two results of its query.
    func emitChanges(_ listener: Listener, old: Node?, new: Node) {
        if listener.eventType == .value {
            if old == nil || old != new { deliverValue(listener, new) }
            return
        }
        for event in WindowDiff.childEvents(from: old ?? .empty, to: new, spec: listener.spec)
        where event.type == listener.eventType {
            deliverChild(listener, event)
        }
    }

    private func deliverValue(_ listener: Listener, _ node: Node) {
        deliver(listener, DataSnapshot(ref: listener.query.ref, node: node, spec: listener.spec), nil)
    }

    private func deliverChild(_ listener: Listener, _ event: ChildEvent) {
        let snapshot = DataSnapshot(ref: listener.query.ref.child(event.key), node: event.node, spec: .default)
        deliver(listener, snapshot, event.prevKey?.string)
    }

    private func deliver(_ listener: Listener, _ snapshot: DataSnapshot, _ prev: String?) {
        if listener.once {
            guard listener.isActive else { return }
            removeListeners { $0 === listener }
            let onEvent = listener.onEvent
            callback { onEvent(snapshot, prev) }
        } else {
            callback {
                guard listener.isActive else { return }
                listener.onEvent(snapshot, prev)
            }
        }
    }

    // MARK: .info

    /// Rebuilds `/.info` and tells its listeners what changed.
    func setInfo(connected: Bool, serverTimeOffset: Int64?) {
        var entries: [(Key, Node)] = [(Key("connected"), .leaf(.bool(connected)))]
        if let serverTimeOffset {
            entries.append((Key("serverTimeOffset"), .leaf(.number(.int(serverTimeOffset)))))
        }
        let info = Node.object(ChildMap(sortedUniqueEntries: entries))
        infoRoot = .object(ChildMap(sortedUniqueEntries: [(Key(".info"), info)]))
        for listener in registeredListeners() where listener.path.isInfo {
            refreshInfoListener(listener)
        }
    }

    /// `.info` listeners get no event until their location has a value (semantics §1.10).
    func refreshInfoListener(_ listener: Listener) {
        let new = WindowDiff.result(of: infoRoot.child(at: listener.path), listener.spec)
        let old = listener.window
        if old == nil, new.isEmpty { return }
        listener.window = new
        emitChanges(listener, old: old, new: new)
    }
}
