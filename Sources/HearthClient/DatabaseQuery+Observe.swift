internal import HearthCore
internal import HearthJSON

extension DatabaseQuery {
    /// Observes `eventType` events; `block` runs on the database's callback queue for each.
    /// A `.value` observer gets the current result first, then every change; child observers
    /// get a `childAdded` for every child present, then the changes.
    @discardableResult
    public func observe(
        _ eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void
    ) -> DatabaseHandle {
        register(eventType, once: false, { snapshot, _ in block(snapshot) }, nil)
    }

    /// As `observe(_:with:)`; `cancelBlock` runs if the observer is refused (an invalid query or
    /// path, an error from the server) and then no other block runs.
    @discardableResult
    public func observe(
        _ eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        register(eventType, once: false, { snapshot, _ in block(snapshot) }, cancelBlock)
    }

    /// As `observe(_:with:)`, also passing the key of the previous child in the query's order
    /// (`nil` for the first; always `nil` for `.value` and `.childRemoved`).
    @discardableResult
    public func observe(
        _ eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) -> DatabaseHandle {
        register(eventType, once: false, block, nil)
    }

    @discardableResult
    public func observe(
        _ eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        register(eventType, once: false, block, cancelBlock)
    }

    /// Calls `block` for the first `eventType` event only, then stops observing.
    public func observeSingleEvent(of eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void)
    {
        register(eventType, once: true, { snapshot, _ in block(snapshot) }, nil)
    }

    public func observeSingleEvent(
        of eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) {
        register(eventType, once: true, { snapshot, _ in block(snapshot) }, cancelBlock)
    }

    public func observeSingleEvent(
        of eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) {
        register(eventType, once: true, block, nil)
    }

    /// Stops the observer `handle`. No block of it runs after this returns (except one that is
    /// already running on the callback queue).
    public func removeObserver(withHandle handle: DatabaseHandle) {
        repo.removeListeners { $0.handle == handle }
    }

    /// Stops observers: on a reference, every observer of its location, queries of it
    /// included; on a query, the observers of that query. Observers of children stay.
    public func removeAllObservers() {
        let path = self.path
        let spec = params.spec
        if self is DatabaseReference {
            repo.removeListeners { $0.path == path }
        } else {
            repo.removeListeners { $0.path == path && $0.spec == spec }
        }
    }

    /// Keeps this query's data synced (subscribed and cached) even without observers, so that
    /// it reads at once and offline; `false` ends that.
    public func keepSynced(_ keep: Bool) {
        guard let (path, spec) = try? validated(), !path.isInfo else { return }
        repo.keepSynced(ClientView.ID(path: path, spec: spec), keep)
    }

    /// Reads the query's current result once: from the server when connected, else from the
    /// local cache when this client knows the data (`DataSnapshot.isFromCache`); otherwise it
    /// waits for the connection.
    public func getData(completion: @escaping @Sendable ((any Error)?, DataSnapshot?) -> Void) {
        read(shallow: false, completion: completion)
    }

    /// One `get`: `shallow` replaces an object's children by `true` (a leaf stays as it is).
    func read(shallow: Bool, completion: @escaping @Sendable ((any Error)?, DataSnapshot?) -> Void) {
        let repo = self.repo
        let ref = self.ref
        let (path, spec): (Path, QuerySpec)
        do {
            (path, spec) = try validated()
        } catch {
            repo.callback { completion(error, nil) }
            return
        }
        if path.isInfo {
            repo.loop.execute {
                let full = WindowDiff.result(of: repo.infoRoot.child(at: path), spec)
                let node = shallow ? ValueConversion.node(fromServer: full.shallowJSONValue()) : full
                repo.callback { completion(nil, DataSnapshot(ref: ref, node: node, spec: spec)) }
            }
            return
        }
        var body = [
            JSONMember("op", .string("get")), JSONMember("path", .string(path.description)),
            JSONMember("format", .string("export")),
        ]
        if shallow { body.append(JSONMember("shallow", .bool(true))) }
        if spec != .default { body.append(JSONMember("query", spec.json)) }
        let request = body
        repo.loop.execute {
            if !repo.isConnected, let cached = repo.cachedResult(ClientView.ID(path: path, spec: spec)) {
                let node = shallow ? ValueConversion.node(fromServer: cached.shallowJSONValue()) : cached
                repo.callback { completion(nil, DataSnapshot(ref: ref, node: node, spec: spec, fromCache: true)) }
                return
            }
            Self.fetch(request, ref: ref, spec: spec, repo: repo, completion: completion)
        }
    }

    private static func fetch(
        _ body: [JSONMember], ref: DatabaseReference, spec: QuerySpec, repo: Repo,
        completion: @escaping @Sendable ((any Error)?, DataSnapshot?) -> Void
    ) {
        repo.send(.request, body) { result in
            switch result {
            case .success(let response):
                let node = ValueConversion.node(fromServer: response["value"] ?? .null)
                repo.callback { completion(nil, DataSnapshot(ref: ref, node: node, spec: spec)) }
            case .failure(let error):
                repo.callback { completion(error, nil) }
            }
        }
    }

    @discardableResult
    private func register(
        _ eventType: DataEventType, once: Bool, _ block: @escaping @Sendable (DataSnapshot, String?) -> Void,
        _ cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        let path: Path
        let spec: QuerySpec
        do {
            (path, spec) = try validated()
        } catch {
            let handle = repo.unusedHandle()
            repo.logger.debug("observer refused", metadata: ["error": "\(error)"])
            if let cancelBlock { repo.callback { cancelBlock(error) } }
            return handle
        }
        return repo.addListener { handle in
            Listener(
                handle: handle, query: self, path: path, spec: spec, eventType: eventType, once: once, onEvent: block,
                onCancel: cancelBlock)
        }
    }
}
