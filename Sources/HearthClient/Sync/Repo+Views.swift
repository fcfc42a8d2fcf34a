internal import HearthCore
internal import HearthJSON

/// Observers, views and events (docs/client.md "Local events and the cache").
///
/// Every observer belongs to the view of its location and query; a view holds one server
/// subscription in cache mode (protocol "Cache mode") whatever the number of its observers, and
/// the server's result it maintains from that subscription's events. What observers see is that
/// result with the pending local writes on top; whenever either changes, the views it touches
/// are marked and `flush` compares each one's new result with the one last shown and raises the
/// difference — deeper views first, and within a view each event group (removed, added, moved,
/// changed, then value) for every observer in registration order (docs/PROTOCOL.md, "Events").
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
        loop.execute { self.attach(listener) }
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
            for listener in removed { self.detach(listener) }
        }
    }

    var listenerCount: Int { shared.withLockedValue { $0.listeners.count } }

    /// Keeps the view of `id` subscribed (and cached) without observers, or lets it go.
    func keepSynced(_ id: ClientView.ID, _ keep: Bool) {
        loop.execute {
            if keep {
                let view = self.view(for: id)
                view.keptSynced = true
                self.subscribe(view)
            } else if let view = self.views[id] {
                view.keptSynced = false
                self.retireIfUnused(view)
            }
        }
    }

    // MARK: Views (on the loop)

    /// The view of `id`, made (with what the disk cache holds of it) when there is none.
    func view(for id: ClientView.ID) -> ClientView {
        if let existing = views[id] { return existing }
        let view = ClientView(id: id)
        if let cached = store?.cachedResult(id) {
            view.server = cached.node
            view.serverRev = cached.rev
        }
        views[id] = view
        return view
    }

    private func attach(_ listener: Listener) {
        guard listener.isActive else { return }
        let view = view(for: ClientView.ID(path: listener.path, spec: listener.spec))
        view.listeners.append(listener)
        if let shown = view.shown {
            // The view is showing a result already: this observer starts from it at once.
            listener.initialized = true
            deliverInitial(listener, shown)
        } else {
            dirty.insert(view.id)
            flush()
        }
        subscribe(view)
    }

    private func detach(_ listener: Listener) {
        guard let view = views[ClientView.ID(path: listener.path, spec: listener.spec)] else { return }
        view.listeners.removeAll { $0 === listener }
        retireIfUnused(view)
    }

    /// Drops a view nobody uses any more: unsubscribes, and keeps its result in the disk cache.
    func retireIfUnused(_ view: ClientView) {
        guard view.isUnused, views[view.id] === view else { return }
        storeCache(view, keeping: Set(views.keys))
        views[view.id] = nil
        if let sub = view.sub {
            viewsBySub[sub] = nil
            sendUnsubscribe(sub)
        }
        view.sub = nil
        view.live = false
        if catchingUp.remove(view.id) != nil { flush() }
    }

    private func sendUnsubscribe(_ sub: Int) {
        send(.session, [JSONMember("op", .string("unsubscribe")), JSONMember("sub", .int(Int64(sub)))]) { _ in }
    }

    // MARK: Server subscriptions (on the loop)

    /// Subscribes `view` on the current connection in cache mode, from the revision its result
    /// reflects when it has one (the server then sends only what changed since).
    @discardableResult
    func subscribe(_ view: ClientView) -> Bool {
        guard channel != nil, !view.path.isInfo, view.sub == nil, !view.subscribing, !view.isUnused else {
            return false
        }
        let events: [JSONValue] = ["child_added", "child_changed", "child_removed", "value"].map { .string($0) }
        var body = [
            JSONMember("op", .string("subscribe")), JSONMember("path", .string(view.path.description)),
            JSONMember("events", .array(events)), JSONMember("cache", .bool(true)),
        ]
        if view.spec != .default { body.append(JSONMember("query", view.spec.json)) }
        if view.server != nil { body.append(JSONMember("since", .int(Int64(view.serverRev)))) }
        view.subscribing = true
        send(.session, body) { result in
            view.subscribing = false
            guard self.views[view.id] === view, !view.isUnused else {
                if case .success(let response) = result, let sub = response["sub"]?.int64Value {
                    self.sendUnsubscribe(Int(sub))
                }
                return
            }
            switch result {
            case .success(let response):
                guard let sub = response["sub"]?.int64Value.map(Int.init) else { return }
                let rev = UInt64(clamping: response["rev"]?.int64Value ?? 0)
                view.sub = sub
                self.viewsBySub[sub] = view
                let resumed = response["resumed"]?.boolValue == true
                let count = Int(response["initial"]?.int64Value ?? 0)
                view.syncing = (count, resumed ? (view.server ?? .empty) : .empty, rev)
                if count <= 0 { self.finishSync(view) }
            case .failure(let error):
                self.cancel(view, error)
            }
        }
        return true
    }

    /// The (re)subscription's initial or catch-up events are all in: they are the server's result.
    private func finishSync(_ view: ClientView) {
        guard let syncing = view.syncing else { return }
        view.server = syncing.result
        view.serverRev = syncing.rev
        view.syncing = nil
        view.live = true
        view.serverCuts = 0
        cacheChanged(view)
        dirty.insert(view.id)
        catchingUp.remove(view.id)
        flush()
    }

    /// Ends a view because the server refused or cancelled its subscription, and tells the
    /// cancel block of each of its observers.
    func cancel(_ view: ClientView, _ error: HearthError) {
        var error = error
        if error.code == .permissionDenied { error.path = view.path.description }
        if let sub = view.sub { viewsBySub[sub] = nil }
        view.sub = nil
        view.live = false
        view.keptSynced = false
        let listeners = view.listeners
        view.listeners = []
        views[view.id] = nil
        if catchingUp.remove(view.id) != nil { flush() }
        let handles = Set(listeners.map(\.handle))
        removeListeners { handles.contains($0.handle) }
        for listener in listeners {
            if let onCancel = listener.onCancel {
                let reported = error
                callback { onCancel(reported) }
            }
        }
    }

    /// One event of a subscription: it updates the view's server result (or the result a
    /// (re)subscription is building); observers hear of it at the next `flush`.
    func handleEvent(_ json: JSONValue, sub: Int) {
        guard let view = viewsBySub[sub] else { return }
        let type = json["event"]?.stringValue ?? ""
        if type == "cancel" {
            // The server has dropped the subscription already: nothing to unsubscribe.
            viewsBySub[sub] = nil
            view.sub = nil
            cancel(view, HearthError(wire: json["error"] ?? .null))
            return
        }
        if let rev = json["rev"]?.int64Value { noteRev(UInt64(clamping: rev)) }
        let key = json["key"]?.stringValue.map(Key.init)
        let value = ValueConversion.node(fromServer: json["value"] ?? .null)
        if var syncing = view.syncing {
            syncing.result = ClientView.applying(type, key: key, value: value, to: syncing.result)
            syncing.remaining -= 1
            view.syncing = syncing
            if syncing.remaining <= 0 { finishSync(view) }
            return
        }
        view.server = ClientView.applying(type, key: key, value: value, to: view.server ?? .empty)
        cacheChanged(view)
        dirty.insert(view.id)
    }

    /// Every later line of the connection reflects at least revision `rev`.
    func noteRev(_ rev: UInt64) {
        if rev > lastRev { lastRev = rev }
    }

    // MARK: Results and events

    /// Marks the views whose result a change at `paths` may affect.
    func markDirty(_ paths: [Path]) {
        for view in views.values where paths.contains(where: { $0.contains(view.path) || view.path.contains($0) }) {
            dirty.insert(view.id)
        }
    }

    /// Raises the events of every marked view, unless a reconnect's catch-up is still arriving
    /// (then all of it is raised at once when it is complete).
    func flush() {
        guard catchingUp.isEmpty, !dirty.isEmpty else { return }
        let marked = dirty.compactMap { views[$0] }
        dirty = []
        let ordered = marked.sorted {
            $0.path.count != $1.path.count ? $0.path.count > $1.path.count : $0.path.description < $1.path.description
        }
        for view in ordered { raiseEvents(view) }
    }

    /// Shows a view's current result to its observers: the difference from the last one to
    /// those that saw it, the whole result to new ones.
    private func raiseEvents(_ view: ClientView) {
        guard let new = visibleResult(view) else { return }
        let old = view.shown
        view.shown = new
        var seen: [Listener] = []
        var fresh: [Listener] = []
        for listener in view.listeners where listener.isActive {
            if listener.initialized { seen.append(listener) } else { fresh.append(listener) }
        }
        if let old, !seen.isEmpty, old != new {
            for event in WindowDiff.childEvents(from: old, to: new, spec: view.spec) {
                for listener in seen where listener.eventType == event.type { deliverChild(listener, event) }
            }
            for listener in seen where listener.eventType == .value { deliverValue(listener, new) }
        }
        for listener in fresh {
            listener.initialized = true
            deliverInitial(listener, new)
        }
    }

    /// What a view shows: the server's result (or, until it has one, what a complete view of an
    /// enclosing location or the disk cache knows) with the pending writes on top; nil while
    /// unknown.
    func visibleResult(_ view: ClientView) -> Node? {
        if view.path.isInfo {
            let node = infoRoot.child(at: view.path)
            return node.isEmpty ? nil : WindowDiff.result(of: node, view.spec)
        }
        var base = view.server ?? completeNode(at: view.path)
        for write in pendingWrites where write.visible { base = write.applied(to: base, at: view.path) }
        return base.map { WindowDiff.result(of: $0, view.spec) }
    }

    /// The server's whole node at `path` as far as the client knows it (a live view first, then
    /// a cached one, then the disk cache), without pending writes; nil when unknown.
    func completeNode(at path: Path) -> Node? {
        var cached: Node?
        for view in views.values where view.spec.isUnfiltered {
            guard let server = view.server, view.syncing == nil, let relative = view.path.relative(path)
            else { continue }
            if view.live { return server.child(at: relative) }
            if cached == nil { cached = server.child(at: relative) }
        }
        return cached ?? store?.completeNode(at: path)
    }

    /// The node at `path` as this client shows it (known server data and pending writes), nil
    /// when unknown.
    func localNode(at path: Path) -> Node? {
        var base = completeNode(at: path)
        for write in pendingWrites where write.visible { base = write.applied(to: base, at: path) }
        return base
    }

    /// A query's result from the local cache (offline reads), nil when unknown.
    func cachedResult(_ id: ClientView.ID) -> Node? {
        if let view = views[id], view.server != nil { return visibleResult(view) }
        return localNode(at: id.path).map { WindowDiff.result(of: $0, id.spec) }
    }

    // MARK: Delivery

    private func deliverInitial(_ listener: Listener, _ result: Node) {
        switch listener.eventType {
        case .value:
            deliverValue(listener, result)
        case .childAdded:
            var prev: Key?
            for (key, node) in WindowDiff.ordered(result, listener.spec) {
                deliverChild(listener, ChildEvent(type: .childAdded, key: key, node: node, prevKey: prev))
                prev = key
            }
        default:
            break
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

    /// Rebuilds `/.info` and tells its observers what changed: `connected`, `serverTimeOffset`,
    /// and `cluster` (the connected node's cluster object, absent for a standalone server).
    func setInfo(connected: Bool, serverTimeOffset: Int64?) {
        var entries: [(Key, Node)] = []
        if let cluster = shared.withLockedValue({ $0.cluster }) {
            entries.append((Key("cluster"), ValueConversion.node(fromServer: cluster.json)))
        }
        entries.append((Key("connected"), .leaf(.bool(connected))))
        if let serverTimeOffset {
            entries.append((Key("serverTimeOffset"), .leaf(.number(.int(serverTimeOffset)))))
        }
        let info = Node.object(ChildMap(sortedUniqueEntries: entries))
        infoRoot = .object(ChildMap(sortedUniqueEntries: [(Key(".info"), info)]))
        for view in views.values where view.path.isInfo { dirty.insert(view.id) }
        flush()
    }
}
