/// A path pattern as Cloud Functions writes them: `/messages/{id}`, `/rooms/{room}/members/{uid}`.
///
/// Segments are separated by `/` (leading, trailing and repeated slashes do not count). A segment
/// `{name}` matches any one segment and binds it to `name`; any other segment matches itself
/// only. A pattern matches paths with exactly as many segments.
public struct PathPattern: Sendable, Equatable, CustomStringConvertible {
    private enum Segment: Sendable, Equatable {
        case literal(String)
        case wildcard(String)
    }

    private let segments: [Segment]

    /// The pattern as given.
    public let description: String

    /// Why a pattern was refused.
    public struct InvalidPattern: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Parses `pattern`; throws when a segment has a brace but is not a whole `{name}`, when a name
    /// is empty, or when a name repeats.
    public init(_ pattern: String) throws(InvalidPattern) {
        var segments: [Segment] = []
        var names: Set<String> = []
        for part in pattern.split(separator: "/") {
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count >= 2 {
                let name = String(part.dropFirst().dropLast())
                guard !name.isEmpty, !name.contains("{"), !name.contains("}") else {
                    throw InvalidPattern(description: "bad wildcard segment '\(part)' in \(pattern)")
                }
                guard names.insert(name).inserted else {
                    throw InvalidPattern(description: "wildcard '\(name)' repeats in \(pattern)")
                }
                segments.append(.wildcard(name))
            } else {
                guard !part.contains("{"), !part.contains("}") else {
                    throw InvalidPattern(description: "bad segment '\(part)' in \(pattern)")
                }
                segments.append(.literal(String(part)))
            }
        }
        self.segments = segments
        self.description = pattern
    }

    /// The wildcard values when `path` matches, nil when it does not.
    public func match(_ path: String) -> [String: String]? {
        let parts = path.split(separator: "/")
        guard parts.count == segments.count else { return nil }
        var params: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let text):
                guard part == text else { return nil }
            case .wildcard(let name):
                params[name] = String(part)
            }
        }
        return params
    }
}
