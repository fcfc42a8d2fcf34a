import HearthJSON

/// How `import` cuts a tree into multi-path updates: each batch's serialized values stay within
/// `maxBytes`, so no request line nears the server's 16 MiB limit. A subtree too large for one batch is split into its
/// children, recursively; priorities (`.priority` members of split objects) go in separate
/// batches, to send once their nodes exist.
struct ImportPlan {
    /// One location to write, relative to the import path (`""`: the import path itself).
    struct Entry: Sendable {
        let path: String
        let value: JSONValue
        let bytes: Int
    }

    /// The updates holding the data, in any order.
    let batches: [[Entry]]
    /// The updates setting priorities of split objects, after every data batch.
    let priorityBatches: [[Entry]]
    /// The serialized size of every entry, for progress.
    let totalBytes: Int

    /// With `splitRoot`, an object or array at the root is split into its children even when it
    /// fits in one batch (to merge them into existing data rather than replace it).
    init(_ value: JSONValue, maxBytes: Int, splitRoot: Bool) throws {
        var entries: [Entry] = []
        var priorities: [Entry] = []
        try Self.collect(value, at: "", split: splitRoot, maxBytes: maxBytes, into: &entries, priorities: &priorities)
        batches = Self.batched(entries, maxBytes: maxBytes)
        priorityBatches = Self.batched(priorities, maxBytes: maxBytes)
        totalBytes = (entries + priorities).reduce(0) { $0 + $1.bytes }
    }

    /// The whole tree as one entry at the import path: a single atomic `set`.
    var singleValue: JSONValue? {
        guard batches.count == 1, priorityBatches.isEmpty, batches[0].count == 1, batches[0][0].path.isEmpty else {
            return nil
        }
        return batches[0][0].value
    }

    private static func collect(
        _ value: JSONValue, at path: String, split: Bool, maxBytes: Int, into entries: inout [Entry],
        priorities: inout [Entry]
    ) throws {
        let bytes = value.serialized.count + path.utf8.count + 8
        let members: [JSONMember]
        switch value {
        case .object(let list) where !list.contains(where: { $0.key == ".value" }) && (split || bytes > maxBytes):
            members = list
        case .array(let list) where split || bytes > maxBytes:
            members = list.enumerated().map { JSONMember(String($0.offset), $0.element) }
        default:
            guard bytes <= maxBytes else {
                throw CLIFailure.failed(
                    "the value at /\(path) is \(bytes) bytes and cannot be split: raise --batch-bytes")
            }
            entries.append(Entry(path: path, value: value, bytes: bytes))
            return
        }
        for member in members {
            guard !member.key.contains("/") else {
                throw CLIFailure.usage("invalid key \"\(member.key)\" below /\(path): keys cannot contain /")
            }
            let childPath = path.isEmpty ? member.key : path + "/" + member.key
            if member.key == ".priority" {
                let size = member.value.serialized.count + childPath.utf8.count + 8
                priorities.append(Entry(path: childPath, value: member.value, bytes: size))
            } else {
                try collect(
                    member.value, at: childPath, split: false, maxBytes: maxBytes, into: &entries,
                    priorities: &priorities)
            }
        }
    }

    private static func batched(_ entries: [Entry], maxBytes: Int) -> [[Entry]] {
        var batches: [[Entry]] = []
        var batch: [Entry] = []
        var batchBytes = 0
        for entry in entries {
            if !batch.isEmpty && batchBytes + entry.bytes > maxBytes {
                batches.append(batch)
                batch = []
                batchBytes = 0
            }
            batch.append(entry)
            batchBytes += entry.bytes
        }
        if !batch.isEmpty { batches.append(batch) }
        return batches
    }
}
