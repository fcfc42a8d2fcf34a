internal import HearthJSON

extension Repo {
    /// Registers an onDisconnect operation: sent now when connected, and again on every new
    /// connection (the server forgets a connection's queue when it ends). `completion` runs once,
    /// when the server first acknowledges or refuses it; a refused operation is not kept.
    func registerOnDisconnect(
        body: [JSONMember], path: [String], replacesSubtree: Bool,
        completion: @escaping @Sendable (HearthError?) -> Void
    ) {
        loop.execute {
            if replacesSubtree {
                // A set, remove or cancel at P overrides everything registered at P or below. An
                // overridden registration's completion still runs when the server answers it.
                for entry in self.onDisconnectEntries where entry.path.starts(with: path) {
                    if let completion = entry.completion { self.overriddenOnDisconnect[entry.id] = completion }
                }
                self.onDisconnectEntries.removeAll { $0.path.starts(with: path) }
            }
            let entry = OnDisconnectEntry(
                id: self.nextOnDisconnectID, body: body, path: path, replacesSubtree: replacesSubtree,
                completion: completion)
            self.nextOnDisconnectID += 1
            self.onDisconnectEntries.append(entry)
            self.sendOnDisconnect(entry.id)
        }
    }

    /// Sends every registered operation, in registration order (on a new connection).
    /// Overridden registrations whose answer was lost with the last connection are done: what
    /// overrode them is registered now.
    func replayOnDisconnect() {
        let overridden = overriddenOnDisconnect
        overriddenOnDisconnect = [:]
        for completion in overridden.values { callback { completion(nil) } }
        for entry in onDisconnectEntries { sendOnDisconnect(entry.id) }
    }

    private func sendOnDisconnect(_ id: Int) {
        guard let entry = onDisconnectEntries.first(where: { $0.id == id }) else { return }
        send(.session, entry.body) { result in
            guard let index = self.onDisconnectEntries.firstIndex(where: { $0.id == id }) else {
                if let completion = self.overriddenOnDisconnect.removeValue(forKey: id) {
                    let error: HearthError?
                    if case .failure(let failure) = result { error = failure } else { error = nil }
                    self.callback { completion(error) }
                }
                return
            }
            let error: HearthError?
            if case .failure(let failure) = result {
                error = failure
                self.onDisconnectEntries.remove(at: index)
            } else {
                error = nil
                self.onDisconnectEntries[index].completion = nil
            }
            guard let completion = entry.completion else { return }
            self.callback { completion(error) }
        }
    }
}
