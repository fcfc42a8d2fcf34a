public import HearthJSON

/// A value validated and converted off the engine thread, ready to be applied.
///
/// Most values contain no server values and are converted to a `Node` once, where they are
/// parsed. A value with `.sv` placeholders keeps its JSON so that the engine can resolve the
/// placeholders against the data at the moment it applies the write (docs/PROTOCOL.md, "Values").
public struct PreparedValue: Sendable {
    /// The node, with placeholders standing in as 0 when `deferred` is set.
    public let node: Node
    /// The JSON of a value that contains server values.
    let deferred: JSONValue?

    /// Validates `json` for writing at `path`, or throws the error to answer with. A final
    /// `.priority` segment names a priority, not a child, so it does not count towards the depth.
    public init(_ json: JSONValue, at path: Path, limits: Limits) throws(DatabaseError) {
        var importer = NodeImporter(limits: limits, baseDepth: path.withoutPriority.count)
        node = try importer.importNode(json)
        deferred = importer.sawServerValue ? json : nil
    }

    /// A value that is already a node.
    public init(node: Node) {
        self.node = node
        deferred = nil
    }

    public var containsServerValues: Bool { deferred != nil }

    /// The node to write at `path` of `root`, with server values resolved at `now`.
    public func resolved(at path: Path, in root: Node, now: Int64, limits: Limits) -> Node {
        guard let deferred else { return node }
        var importer = NodeImporter(limits: limits, baseDepth: path.withoutPriority.count) { serverValue, relative in
            serverValue.resolved(now: now, current: root.child(at: path.appending(Path(relative))))
        }
        // The JSON was validated when this value was prepared; resolution cannot fail.
        return (try? importer.importNode(deferred)) ?? node
    }
}
