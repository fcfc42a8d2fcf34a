extension Node {
    /// The node's hash (Firebase's scheme; docs/PROTOCOL.md, "Values"): Base64 of SHA-1 over a canonical
    /// text; the empty string for the empty node. Stable across versions and implementations.
    public var hash: String {
        if isEmpty { return "" }
        var sha = SHA1()
        sha.update(hashText.utf8)
        return base64Encode(sha.finalize())
    }

    var hashText: String {
        var text = ""
        if let priority {
            text += "priority:" + priority.hashText + ":"
        }
        switch content {
        case .leaf(let value):
            switch value {
            case .bool(let b): text += "boolean:" + (b ? "true" : "false")
            case .number(let n): text += "number:" + hexBits(n.doubleValue)
            case .string(let s): text += "string:" + s
            }
        case .children:
            for (key, child) in childrenInPriorityOrder {
                let childHash = child.hash
                if childHash.isEmpty { continue }
                text += ":" + key.string + ":" + childHash
            }
        }
        return text
    }

    /// The children in priority-index order: no priority first, then numbers, then strings,
    /// ties by key (the default order of queries and of snapshot iteration; docs/PROTOCOL.md, "Queries").
    public var childrenInPriorityOrder: [(key: Key, value: Node)] {
        let map = children
        guard map.contains(where: { $0.value.priority != nil }) else { return Array(map) }
        return map.sorted { a, b in
            let c = Priority.compare(a.value.priority, b.value.priority)
            return c != 0 ? c < 0 : Key.compare(a.key, b.key) < 0
        }
    }
}

extension Priority {
    var hashText: String {
        switch self {
        case .number(let n): return "number:" + hexBits(n.doubleValue)
        case .string(let s): return "string:" + s
        }
    }
}

/// The 16 lowercase hex digits of a double's big-endian IEEE-754 bits.
func hexBits(_ d: Double) -> String {
    let hex = String(d.bitPattern, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
