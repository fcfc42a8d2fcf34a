import Foundation

/// The executable `name` (`hearth`, `hearthd`) that `swift test` built beside the test bundle.
public func builtExecutable(_ name: String) throws -> URL {
    let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = testBinary.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw BuiltExecutableMissing(name: name)
}

/// `builtExecutable` found nothing.
public struct BuiltExecutableMissing: Error, CustomStringConvertible {
    public let name: String
    public var description: String {
        "\(name) was not built beside the tests (swift test builds it; or run `swift build`)"
    }
}
