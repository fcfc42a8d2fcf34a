import HearthCore
import HearthJSON

/// Values as the HTTP API writes them (docs/REST.md, "Output"): compact JSON in plain format, where
/// Firebase's array rule turns an object whose keys are all canonical non-negative integers, the
/// largest below twice the number of children, into an array (holes `null`), at every level; or
/// in export format, which never builds arrays and carries `.priority`.
package enum RESTJSON {
    package static func write(_ node: Node, format: Node.Format, into buffer: inout [UInt8]) {
        if format == .export {
            node.writeJSON(into: &buffer, format: .export)
        } else {
            writePlain(node, into: &buffer)
        }
    }

    package static func bytes(_ node: Node, format: Node.Format) -> [UInt8] {
        var buffer: [UInt8] = []
        write(node, format: format, into: &buffer)
        return buffer
    }

    /// Children in the given order (a query's window) as one object, `null` when there are none;
    /// in plain format an array when the array rule says so.
    package static func writeEntries(
        _ entries: [(key: Key, node: Node)], format: Node.Format, into buffer: inout [UInt8]
    ) {
        writeChildren(
            entries.lazy.map { ($0.key, $0.node) }, count: entries.count, arrayRule: format == .plain, into: &buffer
        ) { write($0, format: format, into: &$1) }
    }

    /// A shallow read's value (children as `true`), objects under the array rule.
    package static func writeShallow(_ node: Node, into buffer: inout [UInt8]) {
        guard case .children(let map) = node.content, !map.isEmpty else {
            writePlain(node, into: &buffer)
            return
        }
        writeChildren(map.lazy.map { ($0.key, $0.value) }, count: map.count, arrayRule: true, into: &buffer) {
            _, buffer in JSONWriter.writeLiteral("true", into: &buffer)
        }
    }

    private static func writePlain(_ node: Node, into buffer: inout [UInt8]) {
        switch node.content {
        case .leaf(let value):
            value.writeJSON(into: &buffer)
        case .children(let map):
            writeChildren(map.lazy.map { ($0.key, $0.value) }, count: map.count, arrayRule: true, into: &buffer) {
                writePlain($0, into: &$1)
            }
        }
    }

    /// `count` children, in the order given, as one object (`null` when there are none), or as an
    /// array with holes `null` when `arrayRule` is on and their keys make one; `writeValue`
    /// writes each child's value.
    private static func writeChildren(
        _ children: some Sequence<(Key, Node)>, count: Int, arrayRule: Bool, into buffer: inout [UInt8],
        writeValue: (Node, inout [UInt8]) -> Void
    ) {
        guard count > 0 else {
            JSONWriter.writeLiteral("null", into: &buffer)
            return
        }
        if arrayRule, let length = arrayLength(of: children.lazy.map(\.0), count: count) {
            var slots = [Node?](repeating: nil, count: length)
            for (key, node) in children { slots[Int(key.string) ?? 0] = node }
            buffer.append(UInt8(ascii: "["))
            for (i, slot) in slots.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                if let slot {
                    writeValue(slot, &buffer)
                } else {
                    JSONWriter.writeLiteral("null", into: &buffer)
                }
            }
            buffer.append(UInt8(ascii: "]"))
            return
        }
        buffer.append(UInt8(ascii: "{"))
        var first = true
        for (key, node) in children {
            if !first { buffer.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.writeString(key.string, into: &buffer)
            buffer.append(UInt8(ascii: ":"))
            writeValue(node, &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// The array length when keys `keys` (`count` of them) make an array under the rule of
    /// docs/REST.md ("Output"): every key a canonical non-negative integer (`0` or no leading zero), the
    /// largest below `2 × count`. Nil otherwise.
    package static func arrayLength(of keys: some Sequence<Key>, count: Int) -> Int? {
        var largest = -1
        for key in keys {
            guard let value = canonicalIndex(key.string) else { return nil }
            largest = max(largest, value)
        }
        guard largest >= 0, largest < 2 * count else { return nil }
        return largest + 1
    }

    private static func canonicalIndex(_ text: String) -> Int? {
        let utf8 = text.utf8
        guard let first = utf8.first, utf8.count <= 10 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
