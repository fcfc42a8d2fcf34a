internal import HearthCore

/// One query location (path and query) and what the client knows of it: the server's result,
/// kept from a single server subscription that every observer of the location shares
/// (Firebase's listen deduplication), and the result its observers were last shown.
///
/// Confined to the repo's event loop.
final class ClientView {
    /// A location and query; `spec` is canonical, so equal queries share a view.
    struct ID: Hashable {
        let path: Path
        let spec: QuerySpec
    }

    let id: ID
    /// The observers, in registration order.
    var listeners: [Listener] = []
    /// `keepSynced(true)`: subscribed, and cached, with no observer.
    var keptSynced = false
    /// The subscription on the current connection, once answered.
    var sub: Int?
    /// A subscribe is in flight on the current connection.
    var subscribing = false
    /// The server's result as of `serverRev`: the location's node for an unfiltered query,
    /// the selected children otherwise. nil until known (from the server or the disk cache).
    var server: Node?
    /// The revision `server` is known to reflect (sent as `since` on the next subscribe).
    var serverRev: UInt64 = 0
    /// While a (re)subscription's initial or catch-up events arrive: how many are still due,
    /// and the result they are building.
    var syncing: (remaining: Int, result: Node, rev: UInt64)?
    /// Whether the subscription on the current connection is complete and streaming.
    var live = false
    /// Connections in a row the server cut (`slow_consumer`) while this view's initial events
    /// were due: at `Repo.cutsBeforeGivingUp` the view is cancelled, since another try would be
    /// cut the same way.
    var serverCuts = 0
    /// The result last shown to the observers (server data with pending writes on top); nil
    /// before the first.
    var shown: Node?

    init(id: ID) { self.id = id }

    var path: Path { id.path }
    var spec: QuerySpec { id.spec }
    var isUnused: Bool { listeners.isEmpty && !keptSynced }

    /// Applies one cache-mode event from the server to a result (protocol "Cache mode").
    static func applying(_ event: String, key: Key?, value: Node, to result: Node) -> Node {
        switch event {
        case "value":
            return value
        case "child_added", "child_changed":
            guard let key else { return result }
            return result.isLeaf ? Node.empty.settingChild(key, value) : result.settingChild(key, value)
        case "child_removed":
            guard let key else { return result }
            return result.settingChild(key, .empty)
        default:
            return result
        }
    }
}
