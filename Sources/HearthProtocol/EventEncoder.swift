public import HearthCore
import HearthJSON

/// Encodes subscription events. The body (everything after the subscription id) is encoded
/// once per view and write and shared by every subscriber of the view; each subscriber's line
/// is its own prefix `{"sub":S,` followed by the shared body. Values travel in export format,
/// so priorities reach the clients.
public enum EventEncoder {
    /// The shared body of a child event, through the end of the line.
    public static func childEventBody(_ event: ViewEvent, rev: UInt64) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64)
        buffer.append(contentsOf: #""event":"#.utf8)
        JSONWriter.writeString(event.type.rawValue, into: &buffer)
        buffer.append(contentsOf: #","rev":"#.utf8)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        buffer.append(contentsOf: #","key":"#.utf8)
        JSONWriter.writeString(event.key?.string ?? "", into: &buffer)
        buffer.append(contentsOf: #","value":"#.utf8)
        event.node.writeJSON(into: &buffer, format: .export)
        if event.type != .childRemoved {
            buffer.append(contentsOf: #","prev":"#.utf8)
            if let prev = event.prevKey {
                JSONWriter.writeString(prev.string, into: &buffer)
            } else {
                buffer.append(contentsOf: "null".utf8)
            }
        }
        buffer.append(contentsOf: "}\n".utf8)
        return buffer
    }

    /// The shared body of a value event for `view`.
    public static func valueEventBody(_ view: View, rev: UInt64) -> [UInt8] {
        var buffer: [UInt8] = Array(#""event":"value","rev":"#.utf8)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        buffer.append(contentsOf: #","value":"#.utf8)
        view.writeValue(into: &buffer, format: .export)
        buffer.append(contentsOf: "}\n".utf8)
        return buffer
    }
}
