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
        JSONWriter.writeLiteral(#""event":"#, into: &buffer)
        JSONWriter.writeString(event.type.rawValue, into: &buffer)
        JSONWriter.writeLiteral(#","rev":"#, into: &buffer)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        JSONWriter.writeLiteral(#","key":"#, into: &buffer)
        JSONWriter.writeString(event.key?.string ?? "", into: &buffer)
        JSONWriter.writeLiteral(#","value":"#, into: &buffer)
        event.node.writeJSON(into: &buffer, format: .export)
        if event.type != .childRemoved {
            JSONWriter.writeLiteral(#","prev":"#, into: &buffer)
            if let prev = event.prevKey {
                JSONWriter.writeString(prev.string, into: &buffer)
            } else {
                JSONWriter.writeLiteral("null", into: &buffer)
            }
        }
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }

    /// The shared body of a value event for `view`.
    public static func valueEventBody(_ view: View, rev: UInt64) -> [UInt8] {
        var buffer: [UInt8] = Array(#""event":"value","rev":"#.utf8)
        JSONWriter.writeInt(Int64(truncatingIfNeeded: rev), into: &buffer)
        JSONWriter.writeLiteral(#","value":"#, into: &buffer)
        view.writeValue(into: &buffer, format: .export)
        JSONWriter.writeLiteral("}\n", into: &buffer)
        return buffer
    }
}
