import Foundation
import HearthCore
import HearthJSON
import XCTest

/// Parses JSON text written in a test.
func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONValue {
    do { return try JSONParser.parse(text) } catch {
        XCTFail("bad JSON in test: \(error)", file: file, line: line)
        return .null
    }
}

/// A node from JSON (export format allowed).
func node(_ value: JSONValue, at path: Path = .root) throws -> Node {
    try PreparedValue(value, at: path, limits: .default).node
}

func path(_ s: String) throws -> Path { try Path.parse(s, allowPriority: true) }

/// The conformance vectors: the project's copy, checked against ../shared when that exists.
enum Vectors {
    static let projectCopy = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/vectors.json")
    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../shared/conformance/vectors.json").standardized

    static let all: JSONValue = {
        let data = (try? Data(contentsOf: projectCopy)) ?? Data()
        return (try? JSONParser.parse([UInt8](data))) ?? .null
    }()

    static func list(_ name: String) -> [JSONValue] {
        if case .array(let items)? = all[name] { return items }
        return []
    }
}

/// Converts client-style `val()` output (arrays per the array rule of docs/client.md, "Values")
/// back to the objects the server stores, so that expected values can be compared as nodes.
func arraysAsObjects(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let elements):
        return .object(
            elements.enumerated().compactMap { i, e in
                e == .null ? nil : JSONMember(String(i), arraysAsObjects(e))
            })
    case .object(let members):
        return .object(members.map { JSONMember($0.key, arraysAsObjects($0.value)) })
    default:
        return value
    }
}
