internal import HearthCore
public import HearthJSON

/// The data a transaction block reads and changes. Change `value` (or `priority`, or a child's
/// through `childData(byAppendingPath:)`) and return `TransactionResult.success(withValue:)`.
///
/// Used only inside the transaction block, on the callback queue; not `Sendable`.
public final class MutableData {
    /// The transaction's whole node, shared by the `MutableData` of its children.
    final class Root {
        var node: Node
        /// The first invalid value assigned, which fails the transaction.
        var error: HearthError?

        init(node: Node) { self.node = node }
    }

    let root: Root
    let path: Path
    private let rootKey: String?

    init(node: Node, key: String?) {
        self.root = Root(node: node)
        self.path = .root
        self.rootKey = key
    }

    private init(root: Root, path: Path, rootKey: String?) {
        self.root = root
        self.path = path
        self.rootKey = rootKey
    }

    private var node: Node { root.node.child(at: path) }

    /// The key of this location (`nil` at the database root).
    public var key: String? { path.last?.string ?? rootKey }

    /// The value, as in `DataSnapshot.value`; assign to change it (`nil` deletes). Server values
    /// can't be used in a transaction (the block must compute the value itself).
    public var value: Any? {
        get { ValueConversion.value(of: node) }
        set {
            do {
                try assign(ValueConversion.json(from: newValue))
            } catch {
                root.error = root.error ?? error
            }
        }
    }

    /// The value as a typed JSON value; assign to change it.
    public var json: JSONValue {
        get { node.jsonValue() }
        set {
            do {
                try assign(newValue)
            } catch {
                root.error = root.error ?? error
            }
        }
    }

    private func assign(_ json: JSONValue) throws(HearthError) {
        var importer = NodeImporter(limits: .default, baseDepth: path.count)
        let new: Node
        do {
            new = try importer.importNode(json)
        } catch {
            throw HearthError(error)
        }
        if importer.sawServerValue {
            throw HearthError(.invalidValue, "server values can't be used in a transaction's value")
        }
        root.node = root.node.setting(path, to: new)
    }

    /// The priority (a `String`, `Int`, `Double` or `nil`); assign to change it.
    public var priority: Any? {
        get { ValueConversion.value(of: node.priority) }
        set {
            do throws(HearthError) {
                let json = try ValueConversion.priorityJSON(newValue)
                guard json[".sv"] == nil else {
                    throw HearthError(.invalidValue, "server values can't be used in a transaction's priority")
                }
                root.node = root.node.setting(path.appending(Key.priority), to: ValueConversion.node(fromServer: json))
            } catch {
                root.error = root.error ?? error
            }
        }
    }

    public var childrenCount: UInt { UInt(node.childCount) }

    public func hasChildren() -> Bool { node.childCount > 0 }

    /// Whether the child at `path` (slashes allowed) has a value.
    public func hasChild(atPath path: String) -> Bool {
        guard let relative = try? Path.parse(path) else { return false }
        return !node.child(at: relative).isEmpty
    }

    /// The data of a descendant; changing it changes this transaction's value. An invalid path
    /// fails the transaction.
    public func childData(byAppendingPath path: String) -> MutableData {
        do {
            let relative = try Path.parse(path)
            return MutableData(root: root, path: self.path.appending(relative), rootKey: rootKey)
        } catch {
            root.error = root.error ?? HearthError(error)
            return MutableData(root: root, path: self.path, rootKey: rootKey)
        }
    }

    /// The children, in priority order (the default order).
    public var children: [MutableData] {
        node.childrenInPriorityOrder.map { MutableData(root: root, path: path.appending($0.key), rootKey: rootKey) }
    }
}
