import Foundation
import HearthJSON
import XCTest

/// Sizes on the command line are in binary units, as the limits they are compared with are
/// (issue #49, item 7: the import said "1048.6 kB" for 1 MiB).
final class CLIByteUnitsTests: XCTestCase {
    func testImportSpeaksInBinaryUnits() async throws {
        try await withCLIServer { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            // 1.5 MiB of JSON: announced, cut into updates of at most the default 1 MiB.
            let value = String(repeating: "x", count: 1000)
            let members = (0..<1573).map { JSONMember(String(format: "k%05d", $0), .string(value)) }
            let bytes = JSONValue.object(members).serialized
            try Data(bytes).write(to: file)
            let result = try hearth("import", "/units", file.path, "--timeout", "30", url: server.url, timeout: 60)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stderr.contains("cutting it into updates of at most 1.0 MiB"), result.stderr)
            let size = Double(bytes.count) / 1_048_576
            XCTAssertTrue(result.stderr.contains("(\(String(format: "%.1f", size)) MiB)"), result.stderr)
            XCTAssertFalse(result.stderr.contains("kB"), result.stderr)
            XCTAssertFalse(result.stderr.contains(" MB"), result.stderr)
        }
    }
}
