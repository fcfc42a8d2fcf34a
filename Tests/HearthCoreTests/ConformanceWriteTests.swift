import Foundation
import HearthCore
import HearthJSON
import XCTest

/// The `writes`, `hashes` and `pushIdPrefixes` vectors of conformance/vectors.json.
final class ConformanceWriteTests: XCTestCase {
    func testProjectCopyOfVectorsMatchesShared() throws {
        XCTAssertNotEqual(Vectors.all, .null, "vectors.json did not load")
        guard FileManager.default.fileExists(atPath: Vectors.shared.path) else {
            throw XCTSkip("../shared is not beside this checkout")
        }
        let shared = try JSONParser.parse([UInt8](Data(contentsOf: Vectors.shared)))
        XCTAssertEqual(
            shared, Vectors.all, "Tests/HearthCoreTests/Resources/vectors.json is stale: copy it from shared/")
    }

    func testWriteVectors() throws {
        let vectors = Vectors.list("writes")
        XCTAssertEqual(vectors.count, 16)
        for vector in vectors {
            let name = vector["name"]?.stringValue ?? "?"
            var database = Database(root: try node(vector["initial"] ?? .null))
            for write in vector["writes"]?.arrayValue ?? [] {
                _ = database.apply(try Self.write(from: write), now: 1_700_000_000_000)
            }
            let expectVal = try node(arraysAsObjects(vector["expectVal"] ?? .null)).strippingPriorities()
            XCTAssertEqual(database.root.strippingPriorities(), expectVal, name)
            let expectExport = try node(vector["expectExportVal"] ?? .null)
            XCTAssertEqual(database.root, expectExport, name)
            XCTAssertEqual(database.root.jsonValue(format: .export).serialized.count > 0, true)
        }
    }

    func testHashVectors() throws {
        let vectors = Vectors.list("hashes")
        XCTAssertEqual(vectors.count, 14)
        for vector in vectors {
            let value = vector["value"] ?? .null
            XCTAssertEqual(try node(value).hash, vector["expectHash"]?.stringValue, "hash of \(value.jsonString)")
        }
    }

    func testPushIdPrefixVectors() throws {
        let vectors = Vectors.list("pushIdPrefixes")
        XCTAssertEqual(vectors.count, 4)
        for vector in vectors {
            let ms = try XCTUnwrap(vector["timestampMs"]?.int64Value)
            XCTAssertEqual(PushIDGenerator.timestampPrefix(ms), vector["expectPrefix"]?.stringValue)
        }
        XCTAssertEqual(PushIDGenerator.timestampPrefix(1_700_000_000_000), "-NjEtLV-")
    }

    /// Turns a vector's write into a core `Write`.
    static func write(from op: JSONValue) throws -> Write {
        let target = try path(op["path"]?.stringValue ?? "/")
        let value = op["value"] ?? .null
        switch op["op"]?.stringValue {
        case "set":
            return .set(path: target, value: try PreparedValue(value, at: target, limits: .default))
        case "setWithPriority":
            let withPriority: JSONValue
            if case .object(var members) = value {
                members.append(JSONMember(".priority", op["priority"] ?? .null))
                withPriority = .object(members)
            } else {
                withPriority = .object([JSONMember(".value", value), JSONMember(".priority", op["priority"] ?? .null)])
            }
            return .set(path: target, value: try PreparedValue(withPriority, at: target, limits: .default))
        case "remove":
            return .set(path: target, value: PreparedValue(node: .empty))
        case "setPriority":
            let priorityPath = target.appending(Key.priority)
            return .set(
                path: priorityPath, value: try PreparedValue(op["priority"] ?? value, at: target, limits: .default))
        case "update":
            let members = value.objectMembers ?? []
            let values = try members.map { member in
                let relative = try Path.parse(member.key, allowPriority: true)
                return (
                    path: relative,
                    value: try PreparedValue(member.value, at: target.appending(relative), limits: .default)
                )
            }
            return try Write.update(at: target, values: values)
        default:
            throw DatabaseError(.badRequest, "unknown vector op \(op)")
        }
    }
}

extension JSONValue {
    var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
}
