internal import HearthCore
internal import HearthJSON
import NIOCore

extension Repo {
    /// Opens the disk store when the configuration asks for one: takes its client id and write
    /// numbers, and puts its pending writes back — shown in the views and queued to be sent in
    /// order (their completions did not survive the restart).
    func openStore() {
        guard let settings = configuration.persistence else { return }
        let store = LocalStore(
            directory: settings.directory, cacheSizeBytes: settings.cacheSizeBytes, logger: logger,
            newClientID: clientID)
        self.store = store
        clientID = store.clientID
        nextWriteNumber = max(nextWriteNumber, store.firstWriteNumber)
        for write in store.pending {
            pendingWrites.append(PendingWrite(id: write.number, overwrites: write.overwrites))
            nextWriteNumber = max(nextWriteNumber, write.number + 1)
            sendWrite(write.number, write.body)
        }
    }

    /// Schedules writing the changed views' results to the disk cache (at most every 100 ms).
    func cacheChanged(_ view: ClientView) {
        guard store != nil, !view.path.isInfo else { return }
        cacheDirty.insert(view.id)
        guard cacheSave == nil else { return }
        cacheSave = loop.scheduleTask(in: .milliseconds(100)) {
            self.cacheSave = nil
            self.saveCache()
        }
    }

    /// Writes the changed views' results.
    func saveCache() {
        let active = Set(views.keys)
        for id in cacheDirty {
            if let view = views[id] { storeCache(view, keeping: active) }
        }
        cacheDirty = []
    }

    /// Writes a view's server result to the disk cache with the revision it is known to reflect
    /// (nothing while a resubscription is rebuilding it).
    func storeCache(_ view: ClientView, keeping active: Set<ClientView.ID>) {
        guard let store, let server = view.server, view.syncing == nil else { return }
        store.store(view.id, node: server, rev: knownRev(of: view), keeping: active)
    }

    /// The revision a view's server result is known to reflect: while its subscription streams,
    /// every revision the connection has seen; otherwise the one it was last brought up to.
    func knownRev(of view: ClientView) -> UInt64 {
        view.live ? max(view.serverRev, lastRev) : view.serverRev
    }
}
