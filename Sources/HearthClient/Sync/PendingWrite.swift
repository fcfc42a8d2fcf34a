internal import HearthCore

/// A write made on this client that the server has not answered yet. Its effect is layered on
/// top of the server's data in every view it touches, so that observers see it at once (local
/// events); the server's answer removes it — silently when the server's data already shows it,
/// with the events that undo it when the server refused it.
struct PendingWrite {
    /// Local id, in the order writes were made.
    let id: UInt64
    /// What the write does, with server values estimated on the client: nodes replacing the
    /// ones at absolute paths, in order (a last segment `.priority` sets its parent's priority).
    var overwrites: [(path: Path, node: Node)]
    /// False for a transaction run without local events.
    var visible = true

    /// The locations the write may change.
    var paths: [Path] { overwrites.map { $0.path.withoutPriority } }

    /// `base` — the data at `location`, nil when unknown — with this write on top. Unknown data
    /// stays unknown unless the write replaces the whole location.
    func applied(to base: Node?, at location: Path) -> Node? {
        var result = base
        for (path, node) in overwrites {
            if path.last == Key.priority {
                let owner = path.withoutPriority
                if let relative = location.relative(path), owner != location {
                    result = result?.setting(relative, to: node)
                } else if owner == location {
                    result = result?.withPriority(node.asPriority)
                }
            } else if let inside = path.relative(location) {
                result = node.child(at: inside)
            } else if let relative = location.relative(path) {
                result = result?.setting(relative, to: node)
            }
        }
        return result
    }

    /// Whether the write may change what is at `location` (at, above or below it).
    func touches(_ location: Path) -> Bool {
        paths.contains { $0.contains(location) || location.contains($0) }
    }
}
