public import HearthJSON

extension Node {
    /// How a node is rendered as JSON.
    public enum Format: Sendable {
        /// Plain values; priorities are omitted.
        case plain
        /// Export format: priorities as `.priority`, a leaf with a priority as
        /// `{".value": v, ".priority": p}`.
        case export
    }

    /// Appends this node's JSON (children in key order) to `buffer`; empty renders as `null`.
    public func writeJSON(into buffer: inout [UInt8], format: Format = .plain) {
        let priority = format == .export ? self.priority : nil
        switch content {
        case .leaf(let value):
            if let priority {
                JSONWriter.writeLiteral(#"{".value":"#, into: &buffer)
                value.writeJSON(into: &buffer)
                JSONWriter.writeLiteral(#",".priority":"#, into: &buffer)
                priority.writeJSON(into: &buffer)
                buffer.append(UInt8(ascii: "}"))
            } else {
                value.writeJSON(into: &buffer)
            }
        case .children(let map):
            if map.isEmpty {
                JSONWriter.writeLiteral("null", into: &buffer)
                return
            }
            buffer.append(UInt8(ascii: "{"))
            var first = true
            for (key, child) in map {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                JSONWriter.writeString(key.string, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                child.writeJSON(into: &buffer, format: format)
            }
            if let priority {
                JSONWriter.writeLiteral(#",".priority":"#, into: &buffer)
                priority.writeJSON(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    /// This node's JSON text as bytes.
    public func jsonBytes(format: Format = .plain) -> [UInt8] {
        var buffer: [UInt8] = []
        writeJSON(into: &buffer, format: format)
        return buffer
    }

    /// This node as a `JSONValue` (children in key order).
    public func jsonValue(format: Format = .plain) -> JSONValue {
        let priority = format == .export ? self.priority : nil
        switch content {
        case .leaf(let value):
            guard let priority else { return value.jsonValue }
            return .object([JSONMember(".value", value.jsonValue), JSONMember(".priority", priority.jsonValue)])
        case .children(let map):
            if map.isEmpty { return .null }
            var members = map.map { JSONMember($0.key.string, $0.value.jsonValue(format: format)) }
            if let priority { members.append(JSONMember(".priority", priority.jsonValue)) }
            return .object(members)
        }
    }

    /// Shallow rendering (protocol `get` with `shallow`): an object's children become `true`;
    /// a leaf renders as itself.
    public func shallowJSONValue() -> JSONValue {
        switch content {
        case .leaf(let value): return value.jsonValue
        case .children(let map):
            return map.isEmpty ? .null : .object(map.map { JSONMember($0.key.string, .bool(true)) })
        }
    }
}

extension LeafValue {
    public var jsonValue: JSONValue {
        switch self {
        case .bool(let b): return .bool(b)
        case .number(let n): return n.jsonValue
        case .string(let s): return .string(s)
        }
    }

    public func writeJSON(into buffer: inout [UInt8]) {
        switch self {
        case .bool(let b): JSONWriter.writeBool(b, into: &buffer)
        case .number(let n): n.writeJSON(into: &buffer)
        case .string(let s): JSONWriter.writeString(s, into: &buffer)
        }
    }
}

extension Number {
    public var jsonValue: JSONValue {
        switch self {
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        }
    }

    public func writeJSON(into buffer: inout [UInt8]) {
        switch self {
        case .int(let i): JSONWriter.writeInt(i, into: &buffer)
        case .double(let d): JSONWriter.writeDouble(d, into: &buffer)
        }
    }
}

extension Priority {
    public var jsonValue: JSONValue {
        switch self {
        case .number(let n): return n.jsonValue
        case .string(let s): return .string(s)
        }
    }

    public func writeJSON(into buffer: inout [UInt8]) {
        switch self {
        case .number(let n): n.writeJSON(into: &buffer)
        case .string(let s): JSONWriter.writeString(s, into: &buffer)
        }
    }
}
