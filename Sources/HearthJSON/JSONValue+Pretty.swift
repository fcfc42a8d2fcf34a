extension JSONValue {
    /// This value as indented JSON text (four spaces a level; empty objects and arrays stay on
    /// one line), for files people read and edit, such as the rules file.
    public var prettyJSONString: String {
        var buffer: [UInt8] = []
        writePretty(into: &buffer, indent: 0)
        return String(decoding: buffer, as: UTF8.self)
    }

    private func writePretty(into buffer: inout [UInt8], indent: Int) {
        func newline(_ level: Int) {
            buffer.append(UInt8(ascii: "\n"))
            buffer.append(contentsOf: repeatElement(UInt8(ascii: " "), count: level * 4))
        }
        switch self {
        case .array(let elements) where !elements.isEmpty:
            buffer.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                element.writePretty(into: &buffer, indent: indent + 1)
            }
            newline(indent)
            buffer.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            buffer.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                JSONWriter.writeString(member.key, into: &buffer)
                buffer.append(contentsOf: ": ".utf8)
                member.value.writePretty(into: &buffer, indent: indent + 1)
            }
            newline(indent)
            buffer.append(UInt8(ascii: "}"))
        default:
            serialize(into: &buffer)
        }
    }
}
