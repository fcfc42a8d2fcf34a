public import HearthCore

/// Random writes over a small key space (keys a, b, c, three deep): leaves and objects with and
/// without priorities, removals that empty ancestors, writes below leaves, priority writes,
/// multi-path updates and onDisconnect-style overwrites. Deterministic for a seed.
public struct RandomWrites {
    public var random: SeededRandom
    public let keys = ["a", "b", "c"].map(Key.init)

    public init(seed: UInt64) { random = SeededRandom(seed: seed) }

    /// Every location of the key space, the root first.
    public var locations: [Path] {
        var locations: [Path] = [.root]
        for a in keys {
            locations.append(Path([a]))
            for b in keys {
                locations.append(Path([a, b]))
                for c in keys { locations.append(Path([a, b, c])) }
            }
        }
        return locations
    }

    public mutating func path(maxDepth: Int = 3) -> Path {
        Path((0..<(1 + random.next(maxDepth))).map { _ in keys[random.next(keys.count)] })
    }

    public mutating func value() -> PreparedValue {
        let node: Node
        switch random.next(5) {
        case 0: node = .empty
        case 1:
            node = .leaf(.number(.int(Int64(random.next(3)))), priority: random.next(2) == 0 ? nil : .string("p"))
        case 2: node = .leaf(.string("s"))
        default:
            var map = ChildMap()
            for key in keys where random.next(2) == 0 {
                map.insert(key, .leaf(.number(.int(Int64(random.next(3))))))
            }
            node = .object(map, priority: random.next(3) == 0 ? .number(.int(1)) : nil)
        }
        return PreparedValue(node: node)
    }

    public mutating func priority() -> PreparedValue {
        PreparedValue(node: random.next(3) == 0 ? .empty : .leaf(.number(.int(Int64(random.next(3))))))
    }

    public mutating func write() throws -> Write {
        switch random.next(5) {
        case 0: return .set(path: path().appending(Key.priority), value: priority())
        case 1:
            let base = path(maxDepth: 2)
            let first = Path([keys[random.next(3)]])
            var second = Path([keys[random.next(3)], keys[random.next(3)]])
            if second.segments[0] == first.segments[0] { second = Path([Key("d")]) }
            return try Write.update(at: base, values: [(first, value()), (second, value())])
        case 2:
            let path = path(maxDepth: 2)
            return .overwrites([(path, value()), (path.appending(keys[random.next(3)]), value())])
        default: return .set(path: path(), value: value())
        }
    }
}

/// A small deterministic generator (SplitMix64), so that a failure can be replayed.
public struct SeededRandom {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }
}
