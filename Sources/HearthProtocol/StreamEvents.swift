import HearthCore
import HearthJSON

/// The Server-Sent Events of a Firebase event stream, encoded on the engine thread once per view
/// and write and shared by every stream of the view that uses the same format (docs/REST.md,
/// "Streaming (Server-Sent Events)").
///
/// Each event is exactly `event: <name>\ndata: <one line>\n\n`. A stream without a query gets
/// each write shaped as it was made: a set at or below its location is one `put` of the new value
/// at the written path, an update there one `patch` of its members, and any write above the
/// location one `put` of the location's new value. A stream with a query gets one `patch` of the
/// children that left (`null`), entered or changed in its window.
///
/// The same events travel over Firebase's realtime protocol (`StreamFraming.firebase`) as the
/// body of a data push: `"p":"<absolute path>","d":<data>},"a":"d"}}` for a `put` and `"a":"m"`
/// for a `patch`. Each listener's connection writes its own prefix before it,
/// `{"t":"d","d":{"b":{` with the listen's tag `"t":N,` when it has one.
package enum StreamEvents {
    package static let keepAlive = frame("keep-alive", Array("null".utf8))
    /// The rules stopped allowing the read; the stream ends after it.
    package static let cancel = frame("cancel", Array(#""Permission denied""#.utf8))
    /// Raw text, as Firebase's Python SDK compares it; the stream ends after it.
    package static let authRevoked = frame("auth_revoked", Array("credential is no longer valid".utf8))

    package static func frame(_ name: String, _ data: [UInt8]) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(name.utf8.count + data.count + 16)
        JSONWriter.writeLiteral("event: ", into: &buffer)
        buffer.append(contentsOf: name.utf8)
        JSONWriter.writeLiteral("\ndata: ", into: &buffer)
        buffer.append(contentsOf: data)
        JSONWriter.writeLiteral("\n\n", into: &buffer)
        return buffer
    }

    /// `put` of `value` at `path` (relative to the stream's location).
    package static func put(
        _ path: Path, framing: StreamFraming = .serverSentEvents, value: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        if case .firebase(let location) = framing {
            return firebasePush(at: location.appending(path), action: "d", value: value)
        }
        var data: [UInt8] = Array(#"{"path":"#.utf8)
        JSONWriter.writeString(path.description, into: &data)
        JSONWriter.writeLiteral(#","data":"#, into: &data)
        value(&data)
        data.append(UInt8(ascii: "}"))
        return frame("put", data)
    }

    /// `patch` at `path` with members already encoded.
    package static func patch(
        _ path: Path, members: [(name: String, value: [UInt8])], framing: StreamFraming = .serverSentEvents
    ) -> [UInt8] {
        if case .firebase(let location) = framing {
            return firebasePush(at: location.appending(path), action: "m") { writeObject(members, into: &$0) }
        }
        var data: [UInt8] = Array(#"{"path":"#.utf8)
        JSONWriter.writeString(path.description, into: &data)
        JSONWriter.writeLiteral(#","data":"#, into: &data)
        writeObject(members, into: &data)
        data.append(UInt8(ascii: "}"))
        return frame("patch", data)
    }

    /// An object of members whose values are encoded already.
    private static func writeObject(_ members: [(name: String, value: [UInt8])], into data: inout [UInt8]) {
        data.append(UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { data.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(member.name, into: &data)
            data.append(UInt8(ascii: ":"))
            data.append(contentsOf: member.value)
        }
        data.append(UInt8(ascii: "}"))
    }

    /// The shared body of a Firebase data push (`d` or `m`) at `path`.
    private static func firebasePush(at path: Path, action: String, value: (inout [UInt8]) -> Void) -> [UInt8] {
        var data: [UInt8] = Array(#""p":"#.utf8)
        JSONWriter.writeString(path.description, into: &data)
        JSONWriter.writeLiteral(#","d":"#, into: &data)
        value(&data)
        JSONWriter.writeLiteral(#"},"a":""#, into: &data)
        data.append(contentsOf: action.utf8)
        JSONWriter.writeLiteral(#""}}"#, into: &data)
        return data
    }

    // MARK: Streams without a query

    /// The first event of a stream without a query: its location's value.
    package static func initial(
        _ location: Node, format: Node.Format, framing: StreamFraming = .serverSentEvents
    ) -> [UInt8] {
        put(.root, framing: framing) { RESTJSON.write(location, format: format, into: &$0) }
    }

    /// The events `write` raises on a stream at `location` (nothing when the data it covers,
    /// as seen in `format`, did not change).
    package static func shaped(
        _ write: Write, at location: Path, before: Node, after: Node, format: Node.Format,
        framing: StreamFraming = .serverSentEvents
    ) -> [[UInt8]] {
        switch write {
        case .set(let path, _), .transaction(let path, _, _, _):
            return set(at: path, location: location, before: before, after: after, format: format, framing: framing)
                .map { [$0] } ?? []
        case .update(let base, let values):
            guard location.contains(base) else {
                return set(
                    at: base, location: location, before: before, after: after, format: format, framing: framing
                ).map { [$0] } ?? []
            }
            let old = before.child(at: base)
            let new = after.child(at: base)
            if unchanged(old, new, format: format) { return [] }
            var members: [(name: String, value: [UInt8])] = []
            for (relative, _) in values {
                let name = relative.segments.map(\.string).joined(separator: "/")
                var value: [UInt8] = []
                if relative.last == Key.priority {
                    guard format == .export else { continue }
                    if let priority = new.child(at: relative.withoutPriority).priority {
                        priority.writeJSON(into: &value)
                    } else {
                        JSONWriter.writeLiteral("null", into: &value)
                    }
                } else {
                    RESTJSON.write(new.child(at: relative), format: format, into: &value)
                }
                members.append((name, value))
            }
            guard !members.isEmpty, let relative = location.relative(base) else { return [] }
            return [patch(relative, members: members, framing: framing)]
        case .overwrites(let entries):
            return entries.compactMap {
                set(at: $0.path, location: location, before: before, after: after, format: format, framing: framing)
            }
        }
    }

    /// A set (or any write treated as one) at `path`: a `put` at the written path when it lies
    /// at or below the location, of the location's value when it lies above.
    private static func set(
        at path: Path, location: Path, before: Node, after: Node, format: Node.Format, framing: StreamFraming
    ) -> [UInt8]? {
        let target = path.withoutPriority
        let changed: Path
        if location.contains(target) {
            changed = target
        } else if target.contains(location) {
            changed = location
        } else {
            return nil
        }
        let new = after.child(at: changed)
        if unchanged(before.child(at: changed), new, format: format) { return nil }
        guard let relative = location.relative(changed) else { return nil }
        return put(relative, framing: framing) { RESTJSON.write(new, format: format, into: &$0) }
    }

    private static func unchanged(_ old: Node, _ new: Node, format: Node.Format) -> Bool {
        format == .export ? old == new : old.hasSameValue(as: new)
    }

    // MARK: Streams with a query

    /// The current value of a query stream: the window (or, for an unfiltered query on a leaf,
    /// the leaf).
    package static func windowValue(_ view: View, location: Node, format: Node.Format, into buffer: inout [UInt8]) {
        if view.spec.isUnfiltered, location.isLeaf {
            RESTJSON.write(location, format: format, into: &buffer)
        } else {
            RESTJSON.writeEntries(view.window, format: format, into: &buffer)
        }
    }

    /// The first event of a query stream.
    package static func initial(
        _ view: View, location: Node, format: Node.Format, framing: StreamFraming = .serverSentEvents
    ) -> [UInt8] {
        put(.root, framing: framing) { windowValue(view, location: location, format: format, into: &$0) }
    }

    /// The event one write's view events raise on a query stream: a `patch` at `/` of the
    /// children that left, entered or changed; a `put` of the whole value when only the value
    /// changed (the location became or stopped being a leaf).
    package static func windowChange(
        _ events: [ViewEvent], view: View, location: Node, format: Node.Format,
        framing: StreamFraming = .serverSentEvents
    ) -> [[UInt8]] {
        var members: [(name: String, value: [UInt8])] = []
        var position: [Key: Int] = [:]
        var valueChanged = false
        for event in events {
            var value: [UInt8] = []
            switch event.type {
            case .childRemoved: JSONWriter.writeLiteral("null", into: &value)
            case .childAdded, .childChanged: RESTJSON.write(event.node, format: format, into: &value)
            case .childMoved: continue
            case .value:
                valueChanged = true
                continue
            }
            guard let key = event.key else { continue }
            if let index = position[key] {
                members[index].value = value
            } else {
                position[key] = members.count
                members.append((key.string, value))
            }
        }
        if valueChanged, members.isEmpty || (view.spec.isUnfiltered && location.isLeaf) {
            return [initial(view, location: location, format: format, framing: framing)]
        }
        return members.isEmpty ? [] : [patch(.root, members: members, framing: framing)]
    }
}

/// How a stream's events are framed: as Server-Sent Events, or as the bodies of Firebase
/// realtime-protocol data pushes, whose paths are absolute (so they carry the stream's location).
package enum StreamFraming: Hashable, Sendable {
    case serverSentEvents
    case firebase(location: Path)
}
