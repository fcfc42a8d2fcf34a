import HearthCore
import XCTest

@testable import HearthClient

/// A pending write layered on the data of one location must show what the server's tree will
/// hold there once it applies the write.
final class PendingWriteTests: XCTestCase {
    private let keys = ["a", "b", "c"].map(Key.init)

    private func randomPath(_ generator: inout some RandomNumberGenerator, maxDepth: Int = 3) -> Path {
        Path((0..<Int.random(in: 0...maxDepth, using: &generator)).map { _ in keys.randomElement(using: &generator)! })
    }

    private func randomNode(_ generator: inout some RandomNumberGenerator, depth: Int = 2) -> Node {
        switch Int.random(in: 0...4, using: &generator) {
        case 0: return .empty
        case 1: return .leaf(.number(.int(Int64.random(in: 0...9, using: &generator))))
        case 2 where depth > 0:
            var node = Node.empty
            for key in keys where Bool.random(using: &generator) {
                node = node.settingChild(key, randomNode(&generator, depth: depth - 1))
            }
            return Bool.random(using: &generator) ? node.withPriority(.number(.int(1))) : node
        default: return .leaf(.string("s"), priority: Bool.random(using: &generator) ? .string("p") : nil)
        }
    }

    func testALayeredWriteShowsWhatTheServerWillHold() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let root = randomNode(&generator, depth: 4)
            var overwrites: [(path: Path, node: Node)] = []
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                var path = randomPath(&generator)
                if Int.random(in: 0...4, using: &generator) == 0 { path = path.appending(Key.priority) }
                let node =
                    path.last == Key.priority
                    ? Node.leaf(.number(.int(Int64.random(in: 0...3, using: &generator))))
                    : randomNode(&generator)
                overwrites.append((path, node))
            }
            var expected = root
            for (path, node) in overwrites { expected = expected.setting(path, to: node) }
            let write = PendingWrite(id: 1, overwrites: overwrites)
            let location = randomPath(&generator)
            let shown = write.applied(to: root.child(at: location), at: location)
            XCTAssertEqual(shown, expected.child(at: location), "at \(location) after \(overwrites) on \(root)")
            if shown != expected.child(at: location) { return }
        }
    }

    func testUnknownDataStaysUnknownUnlessTheWholeLocationIsReplaced() {
        let below = PendingWrite(id: 1, overwrites: [(Path([Key("a"), Key("b")]), .leaf(.bool(true)))])
        XCTAssertNil(below.applied(to: nil, at: Path([Key("a")])))
        let above = PendingWrite(
            id: 2, overwrites: [(Path([]), .object(ChildMap().inserting(Key("a"), .leaf(.bool(true)))))])
        XCTAssertEqual(above.applied(to: nil, at: Path([Key("a")])), .leaf(.bool(true)))
    }
}
