public import HearthCore

/// The kinds of change a trigger reacts to. `write` in a trigger's `on` stands for all three.
public enum TriggerKind: String, Sendable, Hashable, CaseIterable {
    /// Absent before the write, present after it.
    case create
    /// Present before and after, with a different value (or priority).
    case update
    /// Present before the write, absent after it.
    case delete
}

/// A trigger's path pattern, written as Cloud Functions write them: `/messages/{id}/likes/{uid}`.
/// Each segment is a literal key (validated like any key) or a `{name}` wildcard matching any one
/// key; the name is letters, digits and `_`, and appears once in the pattern.
public struct TriggerPattern: Sendable, Hashable, CustomStringConvertible {
    public enum Segment: Sendable, Hashable {
        case literal(Key)
        case wildcard(String)
    }

    /// Why a pattern is invalid.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let segments: [Segment]
    /// The pattern as configured.
    public let text: String

    public init(_ text: String, limits: Limits = .default) throws(Invalid) {
        func invalid(_ why: String) -> Invalid { Invalid(description: "path pattern \"\(text)\" is invalid: \(why)") }
        guard text.hasPrefix("/") else { throw invalid("it must start with \"/\"") }
        var segments: [Segment] = []
        var names: Set<String> = []
        for part in text.split(separator: "/", omittingEmptySubsequences: true) {
            if part.hasPrefix("{") || part.hasSuffix("}") {
                let name = part.dropFirst().dropLast()
                guard part.count >= 3, part.hasPrefix("{"), part.hasSuffix("}"),
                    name.utf8.allSatisfy(Self.isNameByte)
                else {
                    throw invalid("\"\(part)\" must be a literal key or a {name} wildcard of letters, digits and _")
                }
                guard names.insert(String(name)).inserted else {
                    throw invalid("the wildcard {\(name)} appears twice")
                }
                segments.append(.wildcard(String(name)))
            } else {
                do throws(DatabaseError) {
                    segments.append(.literal(try Key.validated(String(part), limits: limits)))
                } catch {
                    throw invalid(error.message)
                }
            }
        }
        guard segments.count <= limits.maxDepth else {
            throw invalid("it has \(segments.count) segments; the maximum depth is \(limits.maxDepth)")
        }
        self.segments = segments
        self.text = text
    }

    public var description: String { text }

    /// An ASCII letter, digit or `_`.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "_")
    }

    /// The wildcard values when `path` is exactly a location of the pattern, in the pattern's
    /// order; nil otherwise.
    public func match(_ path: Path) -> [TriggerParam]? {
        guard path.count == segments.count else { return nil }
        return matchPrefix(path)
    }

    /// The wildcard values of the pattern's first `path.count` segments when they match `path`.
    private func matchPrefix(_ path: Path) -> [TriggerParam]? {
        guard path.count <= segments.count else { return nil }
        var params: [TriggerParam] = []
        for (segment, key) in zip(segments, path.segments) {
            switch segment {
            case .literal(let literal):
                guard literal == key else { return nil }
            case .wildcard(let name):
                guard key != Key.priority else { return nil }
                params.append(TriggerParam(name: name, value: key.string))
            }
        }
        return params
    }

    /// The pattern's locations a write changed, each once, with its kind and its values before
    /// and after. `changedPaths` are the paths the write set (a multi-path update names each of
    /// its paths); `before` and `after` are the whole tree around the write. A write at or below
    /// a location changes at most that location; a write above the pattern's depth (a set of
    /// `/messages` for `/messages/{id}`) yields every location under it whose value differs.
    public func changes(at changedPaths: [Path], before: Node, after: Node) -> [TriggerChange] {
        var seen: Set<Path> = []
        var changes: [TriggerChange] = []
        for changed in changedPaths {
            var locations: [Path] = []
            if changed.count >= segments.count {
                let location = Path(Array(changed.segments.prefix(segments.count)))
                if match(location) != nil { locations.append(location) }
            } else if matchPrefix(changed) != nil {
                collect(changed, before: before.child(at: changed), after: after.child(at: changed), into: &locations)
            }
            for location in locations where seen.insert(location).inserted {
                let old = before.child(at: location)
                let new = after.child(at: location)
                let kind: TriggerKind
                switch (old.isEmpty, new.isEmpty) {
                case (true, true): continue
                case (true, false): kind = .create
                case (false, true): kind = .delete
                case (false, false):
                    guard old != new else { continue }
                    kind = .update
                }
                guard let params = match(location) else { continue }
                changes.append(TriggerChange(path: location, params: params, kind: kind, before: old, after: new))
            }
        }
        return changes
    }

    /// The pattern's locations under `path` (whose subtrees before and after are given) where the
    /// two differ, in key order.
    private func collect(_ path: Path, before: Node, after: Node, into locations: inout [Path]) {
        if before.isIdentical(to: after) || (before.isEmpty && after.isEmpty) { return }
        guard path.count < segments.count else {
            locations.append(path)
            return
        }
        switch segments[path.count] {
        case .literal(let key):
            collect(path.appending(key), before: before.child(key), after: after.child(key), into: &locations)
        case .wildcard:
            var keys: [Key] = []
            for (key, _) in before.children { keys.append(key) }
            for (key, _) in after.children where before.children[key] == nil { keys.append(key) }
            keys.sort()
            for key in keys {
                collect(path.appending(key), before: before.child(key), after: after.child(key), into: &locations)
            }
        }
    }
}

/// One wildcard's value at a matched location.
public struct TriggerParam: Sendable, Hashable {
    public let name: String
    public let value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// One location a write changed, as a trigger sees it.
public struct TriggerChange: Sendable, Equatable {
    public let path: Path
    public let params: [TriggerParam]
    public let kind: TriggerKind
    /// The value before the write (empty when created) and after it (empty when deleted).
    public let before: Node
    public let after: Node
}
