import Foundation
import HearthJSON
import XCTest

/// `hearth import` and `hearth export` of a 100k-leaf tree, in pages and bounded batches.
final class CLIImportExportTests: XCTestCase {
    /// 20,000 children of 4 leaves (every 1,000th with a priority) plus one child of 20,000
    /// leaves with a priority: 100,000 leaves.
    static func tree() -> JSONValue {
        var members: [JSONMember] = []
        for i in 0..<20_000 {
            var child: [JSONMember] = [
                JSONMember("n", .int(Int64(i))), JSONMember("name", .string("item \(i)")),
                JSONMember("sub", .object(["half": .double(Double(i) + 0.5), "even": .bool(i % 2 == 0)])),
            ]
            if i % 1000 == 0 { child.append(JSONMember(".priority", .int(Int64(i)))) }
            members.append(JSONMember(String(format: "item%05d", i), .object(child)))
        }
        let wide =
            (0..<20_000).map { JSONMember("w\($0)", .int(Int64($0))) } + [JSONMember(".priority", .string("wide"))]
        members.append(JSONMember("wide", .object(wide)))
        return .object(members)
    }

    func testRoundTripOf100kLeaves() async throws {
        try await withCLIServer { server in
            let url = server.url
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "hearth-cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let source = directory.appendingPathComponent("tree.json")
            let exported = directory.appendingPathComponent("export.json")
            let tree = Self.tree()
            try Data(tree.serialized).write(to: source)

            var result = try hearth("import", "/src", source.path, url: url, timeout: 60)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, "")
            XCTAssertTrue(result.stderr.contains("import: 100%"), result.stderr)

            result = try hearth("export", "/src", exported.path, "--page-size", "2000", url: url, timeout: 60)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stderr.contains("export: 100% (20001/20001 children"), result.stderr)
            let file = try JSONParser.parse([UInt8](Data(contentsOf: exported)))
            XCTAssertEqual(file.canonical, tree.canonical)

            // Small batches: "wide" is split, so its priority goes in a batch of its own.
            result = try hearth("import", "/dst", exported.path, "--batch-bytes", "262144", url: url, timeout: 60)
            XCTAssertEqual(result.status, 0, result.stderr)
            result = try hearth("get", "/dst", "--export", url: url)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try result.json().canonical, tree.canonical)
        }
    }

    func testImportReplacesAndMerges() async throws {
        try await withCLIServer { server in
            let url = server.url
            XCTAssertEqual(try hearth("set", "/d", #"{"old":1,"keep":{"x":1}}"#, url: url).status, 0)
            XCTAssertEqual(
                try hearth("import", "/d", "-", "--merge", url: url, stdin: #"{"keep":{"y":2},"new":3}"#).status, 0)
            XCTAssertEqual(
                try hearth("get", "/d", url: url).json(),
                .object(["keep": .object(["y": .int(2)]), "new": .int(3), "old": .int(1)]))
            XCTAssertEqual(try hearth("import", "/d", "-", url: url, stdin: #"{"only":true}"#).status, 0)
            XCTAssertEqual(try hearth("get", "/d", url: url).json(), .object(["only": .bool(true)]))

            // Leaves and absent locations export as one value.
            XCTAssertEqual(try hearth("export", "/d/only", url: url).stdout, "true\n")
            XCTAssertEqual(try hearth("export", "/none", url: url).stdout, "null\n")
            var result = try hearth("import", "/d", "-", url: url, stdin: "{oops")
            XCTAssertEqual(result.status, 1)
            XCTAssertEqual(result.stdout, "")
            result = try hearth("import", "/d", "/nonexistent/file.json", url: url)
            XCTAssertEqual(result.status, 1)
        }
    }
}
