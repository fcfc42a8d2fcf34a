import Foundation
import HearthJSON

/// The conformance vectors, read from the core tests' copy.
enum ServerVectors {
    static let all: JSONValue = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../HearthCoreTests/Resources/vectors.json").standardized
        let data = (try? Data(contentsOf: url)) ?? Data()
        return (try? JSONParser.parse([UInt8](data))) ?? .null
    }()

    static func list(_ name: String) -> [JSONValue] {
        if case .array(let items)? = all[name] { return items }
        return []
    }

    /// A vector query (HearthCoreTests/Resources/vectors.json: orderBy key|value|priority|child +
    /// child, startAt, …) as the wire query object of docs/PROTOCOL.md ("Queries").
    static func wireQuery(_ query: JSONValue) -> JSONValue {
        var members: [JSONMember] = []
        for member in query.objectMembers ?? [] {
            switch member.key {
            case "orderBy":
                switch member.value.stringValue {
                case "key": members.append(JSONMember("orderBy", .string("$key")))
                case "value": members.append(JSONMember("orderBy", .string("$value")))
                case "priority": members.append(JSONMember("orderBy", .string("$priority")))
                default: members.append(JSONMember("orderBy", query["child"] ?? .null))
                }
            case "child": continue
            default: members.append(member)
            }
        }
        return .object(members)
    }

    /// An `invalidQueries` call sequence (e.g. [["orderByKey"], ["startAt","a","b"]]) as a wire
    /// query object; repeated calls become repeated members, which the server must reject.
    static func wireQuery(calls: [JSONValue]) -> JSONValue {
        var members: [JSONMember] = []
        for call in calls {
            guard case .array(let parts) = call, let name = parts.first?.stringValue else { continue }
            let args = Array(parts.dropFirst())
            switch name {
            case "orderByKey": members.append(JSONMember("orderBy", .string("$key")))
            case "orderByValue": members.append(JSONMember("orderBy", .string("$value")))
            case "orderByPriority": members.append(JSONMember("orderBy", .string("$priority")))
            case "orderByChild": members.append(JSONMember("orderBy", args.first ?? .null))
            case "limitToFirst", "limitToLast": members.append(JSONMember(name, args.first ?? .null))
            default:
                // startAt, startAfter, endAt, endBefore, equalTo with an optional key.
                members.append(JSONMember(name, args.first ?? .null))
                if args.count > 1 { members.append(JSONMember(name + "Key", args[1])) }
            }
        }
        return .object(members)
    }

    /// A vector's write as a request line at `prefix`.
    static func request(for write: JSONValue, prefix: String) -> String {
        let path = prefix + (write["path"]?.stringValue ?? "/")
        let value = write["value"] ?? .null
        switch write["op"]?.stringValue {
        case "set":
            return JSONValue.object(["op": .string("set"), "path": .string(path), "value": value]).jsonString
        case "setWithPriority":
            return JSONValue.object([
                "op": .string("set"), "path": .string(path), "value": value, "priority": write["priority"] ?? .null,
            ]).jsonString
        case "remove":
            return JSONValue.object(["op": .string("remove"), "path": .string(path)]).jsonString
        case "setPriority":
            // The vectors carry the new priority in `value`.
            return JSONValue.object([
                "op": .string("setPriority"), "path": .string(path), "priority": write["priority"] ?? value,
            ]).jsonString
        default:
            return JSONValue.object(["op": .string("update"), "path": .string(path), "values": value]).jsonString
        }
    }
}

extension JSONValue {
    var arrayItems: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }
}
