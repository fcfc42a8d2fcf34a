import HearthCore
import HearthJSON
import XCTest

/// Helpers shared by the query and view tests.
enum QueryTestSupport {
    /// Converts a vector's query (Resources/vectors.json: `orderBy` key|value|priority|child + `child`) to
    /// the wire object of docs/PROTOCOL.md (`orderBy` "$key"|"$value"|"$priority"|"<path>").
    static func wireQuery(_ query: JSONValue?) -> JSONValue {
        guard case .object(let members)? = query else { return .object([]) }
        var out: [JSONMember] = []
        for member in members {
            switch member.key {
            case "orderBy":
                switch member.value.stringValue {
                case "key": out.append(JSONMember("orderBy", .string("$key")))
                case "value": out.append(JSONMember("orderBy", .string("$value")))
                case "priority": out.append(JSONMember("orderBy", .string("$priority")))
                default: out.append(JSONMember("orderBy", query?["child"] ?? .null))
                }
            case "child":
                continue
            default:
                out.append(member)
            }
        }
        return .object(out)
    }

    /// The keys of `location`'s children that a write to `paths` may have changed, nil when a
    /// path is at or above `location` (unknown), as the server computes them.
    static func changedChildren(at location: Path, paths: [Path]) -> [Key]? {
        var keys: [Key] = []
        for path in paths {
            if path.contains(location) { return nil }
            if location.contains(path) { keys.append(path.segments[location.count]) }
        }
        return keys
    }

    /// The flat [type, key, prevKey] form of the vectors.
    static func triples(_ events: [ViewEvent]) -> [JSONValue] {
        events.map { event in
            .array([
                .string(event.type.rawValue),
                event.key.map { .string($0.string) } ?? .null,
                event.prevKey.map { .string($0.string) } ?? .null,
            ])
        }
    }

    /// The member names of a rendered JSON object, in order (nil when not an object).
    static func renderedKeys(_ view: View) -> [String]? {
        var buffer: [UInt8] = []
        view.writeValue(into: &buffer, format: .export)
        guard let parsed = try? JSONParser.parse(buffer) else { return nil }
        switch parsed {
        case .null: return []
        case .object(let members): return members.map(\.key).filter { $0 != ".priority" }
        default: return nil
        }
    }
}
