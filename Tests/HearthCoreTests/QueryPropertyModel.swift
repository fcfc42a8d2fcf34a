import HearthCore
import HearthJSON
import XCTest

/// A deterministic generator (SplitMix64), so that every run exercises the same cases.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
}

/// The naive model and the generators of `QueryPropertyTests`.
extension QueryPropertyTests {
    // MARK: The model

    /// A test-side sort value: kind rank, then a number or UTF-16 units.
    struct SortValue {
        var rank: Int
        var number: Double = 0
        var units: [UInt16] = []

        static func compare(_ a: SortValue, _ b: SortValue) -> Int {
            if a.rank != b.rank { return a.rank < b.rank ? -1 : 1 }
            if a.rank == 3, a.number != b.number { return a.number < b.number ? -1 : 1 }
            if a.rank == 4, a.units != b.units { return a.units.lexicographicallyPrecedes(b.units) ? -1 : 1 }
            return 0
        }

        init(rank: Int, number: Double = 0, units: [UInt16] = []) {
            self.rank = rank
            self.number = number
            self.units = units
        }

        init(json: JSONValue) {
            switch json {
            case .null: self.init(rank: 0)
            case .bool(let b): self.init(rank: b ? 2 : 1)
            case .int(let i): self.init(rank: 3, number: Double(i))
            case .double(let d): self.init(rank: 3, number: d)
            case .string(let s): self.init(rank: 4, units: Array(s.utf16))
            default: self.init(rank: 5)
            }
        }

        init(node: Node) {
            switch node.leafValue {
            case .bool(let b)?: self.init(rank: b ? 2 : 1)
            case .number(let n)?: self.init(rank: 3, number: n.doubleValue)
            case .string(let s)?: self.init(rank: 4, units: Array(s.utf16))
            case nil: self.init(rank: node.isEmpty ? 0 : 5)
            }
        }

        init(priority: Priority?) {
            switch priority {
            case nil: self.init(rank: 0)
            case .number(let n)?: self.init(rank: 3, number: n.doubleValue)
            case .string(let s)?: self.init(rank: 4, units: Array(s.utf16))
            }
        }
    }

    enum Order {
        case priority
        case key
        case value
        case child([String])

        var wire: String {
            switch self {
            case .priority: return "$priority"
            case .key: return "$key"
            case .value: return "$value"
            case .child(let path): return path.joined(separator: "/")
            }
        }

        func sortValue(_ node: Node) -> SortValue {
            switch self {
            case .priority: return SortValue(priority: node.priority)
            case .key: return SortValue(rank: 0)
            case .value: return SortValue(node: node)
            case .child(let path):
                var current = node
                for segment in path { current = current.child(Key(segment)) }
                return SortValue(node: current)
            }
        }

        func moved(_ old: Node, _ new: Node) -> Bool {
            switch self {
            case .key: return false
            case .value: return old != new
            case .priority, .child: return SortValue.compare(sortValue(old), sortValue(new)) != 0
            }
        }
    }

    /// A bound as the model reads it: (value, key sentinel -1/0/1, key, inclusive).
    struct Bound {
        var value: SortValue
        var sentinel: Int
        var key: Key
        var inclusive: Bool
    }

    /// A generated query: its wire object and the model's reading of it.
    struct Query {
        var order: Order
        var start: Bound?
        var end: Bound?
        var limit: (first: Bool, n: Int)?
        var wire: JSONValue

        var isUnfiltered: Bool { start == nil && end == nil && limit == nil }

        func compare(_ a: (SortValue, Key), _ b: (SortValue, Key)) -> Int {
            if case .key = order { return Key.compare(a.1, b.1) }
            let c = SortValue.compare(a.0, b.0)
            return c != 0 ? c : Key.compare(a.1, b.1)
        }

        func compare(_ a: (SortValue, Key), _ bound: Bound) -> Int {
            if case .key = order {
            } else {
                let c = SortValue.compare(a.0, bound.value)
                if c != 0 { return c }
            }
            if bound.sentinel != 0 { return -bound.sentinel }
            return Key.compare(a.1, bound.key)
        }

        /// The window by brute force.
        func window(_ location: Node) -> [(key: Key, node: Node)] {
            var all = location.children.map { (key: $0.key, node: $0.value, sort: order.sortValue($0.value)) }
            all.sort { compare(($0.sort, $0.key), ($1.sort, $1.key)) < 0 }
            let inRange = all.filter { child in
                if let start {
                    let c = compare((child.sort, child.key), start)
                    if c < 0 || (c == 0 && !start.inclusive) { return false }
                }
                if let end {
                    let c = compare((child.sort, child.key), end)
                    if c > 0 || (c == 0 && !end.inclusive) { return false }
                }
                return true
            }
            let limited: ArraySlice =
                limit.map { $0.first ? inRange.prefix($0.n) : inRange.suffix($0.n) } ?? inRange[...]
            return limited.map { (key: $0.key, node: $0.node) }
        }
    }

    // MARK: Generators

    static func leafJSON(_ rng: inout SplitMix64) -> JSONValue {
        switch rng.int(0...5) {
        case 0: return .bool(rng.chance(0.5))
        case 1, 2: return .int(Int64(rng.int(-2...3)))
        case 3: return .double(rng.pick([0.5, 1.5, 2.0, -1.25]))
        default: return .string(rng.pick(strings))
        }
    }

    static func priorityJSON(_ rng: inout SplitMix64) -> JSONValue {
        switch rng.int(0...3) {
        case 0: return .null
        case 1: return .int(Int64(rng.int(-1...3)))
        case 2: return .double(rng.pick([0.5, 2.0]))
        default: return .string(rng.pick(["", "a", "b", "10", "9"]))
        }
    }

    static func withPriority(_ value: JSONValue, _ rng: inout SplitMix64) -> JSONValue {
        guard rng.chance(0.3) else { return value }
        let priority = priorityJSON(&rng)
        if case .object(var members) = value {
            members.append(JSONMember(".priority", priority))
            return .object(members)
        }
        if value == .null { return value }
        return .object([JSONMember(".value", value), JSONMember(".priority", priority)])
    }

    /// A child of the list: a leaf, an object with some of s, t, n/x, or null.
    static func childJSON(_ rng: inout SplitMix64) -> JSONValue {
        let roll = rng.int(0...19)
        if roll < 3 { return .null }
        if roll < 9 { return withPriority(leafJSON(&rng), &rng) }
        var members: [JSONMember] = []
        if rng.chance(0.7) {
            members.append(
                JSONMember("s", rng.chance(0.15) ? .object([JSONMember("q", leafJSON(&rng))]) : leafJSON(&rng)))
        }
        if rng.chance(0.4) { members.append(JSONMember("t", leafJSON(&rng))) }
        if rng.chance(0.3) { members.append(JSONMember("n", .object([JSONMember("x", leafJSON(&rng))]))) }
        return withPriority(.object(members), &rng)
    }

    static func listJSON(_ rng: inout SplitMix64) -> JSONValue {
        var members: [JSONMember] = []
        for key in keys where rng.chance(0.6) { members.append(JSONMember(key, childJSON(&rng))) }
        return .object(members)
    }

    static func boundValue(_ order: Order, _ rng: inout SplitMix64) -> JSONValue {
        switch order {
        case .key: return .string(rng.pick(keys + ["", "b", "bb", "0", "5", "[MIN_NAME]", "[MAX_NAME]"]))
        case .priority: return priorityJSON(&rng)
        case .value, .child: return rng.chance(0.2) ? rng.pick([.null, .bool(false), .bool(true)]) : leafJSON(&rng)
        }
    }

    static func query(_ rng: inout SplitMix64) throws -> Query {
        let order = rng.pick([Order.priority, .key, .value, .child(["s"]), .child(["n", "x"]), .priority, .value])
        var members: [JSONMember] = []
        if case .priority = order, rng.chance(0.5) {
        } else {
            members.append(JSONMember("orderBy", .string(order.wire)))
        }
        var start: Bound?
        var end: Bound?

        func bound(_ name: String, value: JSONValue, key: String?, defaultSentinel: Int, inclusive: Bool) -> Bound {
            members.append(JSONMember(name, value))
            if let key { members.append(JSONMember(name + "Key", .string(key))) }
            if case .key = order, case .string(let s) = value {
                let sentinel = s == "[MIN_NAME]" ? -1 : (s == "[MAX_NAME]" ? 1 : 0)
                return Bound(value: SortValue(rank: 0), sentinel: sentinel, key: Key(s), inclusive: inclusive)
            }
            var sentinel = defaultSentinel
            if let key { sentinel = key == "[MIN_NAME]" ? -1 : (key == "[MAX_NAME]" ? 1 : 0) }
            return Bound(value: SortValue(json: value), sentinel: sentinel, key: Key(key ?? ""), inclusive: inclusive)
        }
        func key() -> String? {
            if case .key = order { return nil }
            return rng.chance(0.4) ? rng.pick(keys + ["[MIN_NAME]", "[MAX_NAME]"]) : nil
        }

        if rng.chance(0.1) {
            let value = boundValue(order, &rng)
            let k = key()
            start = bound("equalTo", value: value, key: k, defaultSentinel: -1, inclusive: true)
            end = Bound(
                value: start?.value ?? SortValue(rank: 0), sentinel: k == nil ? 1 : (start?.sentinel ?? 0),
                key: start?.key ?? Key(""), inclusive: true)
            if case .key = order { end = start }
        } else {
            if rng.chance(0.45) {
                let after = rng.chance(0.5)
                start = bound(
                    after ? "startAfter" : "startAt", value: boundValue(order, &rng), key: key(),
                    defaultSentinel: after ? 1 : -1, inclusive: !after)
            }
            if rng.chance(0.45) {
                let before = rng.chance(0.5)
                end = bound(
                    before ? "endBefore" : "endAt", value: boundValue(order, &rng), key: key(),
                    defaultSentinel: before ? -1 : 1, inclusive: !before)
            }
        }
        var limit: (first: Bool, n: Int)?
        if rng.chance(0.5) {
            limit = (rng.chance(0.5), rng.int(1...4))
            members.append(
                JSONMember(limit?.first == true ? "limitToFirst" : "limitToLast", .int(Int64(limit?.n ?? 1))))
        }
        return Query(order: order, start: start, end: end, limit: limit, wire: .object(members))
    }

    // MARK: Writes

    /// A random write; the weights favour the view location /list.
    static func write(_ rng: inout SplitMix64) throws -> Write {
        let list = try path("/list")
        let key = Key(rng.pick(keys))
        let roll = rng.int(0...99)
        func set(_ p: Path, _ value: JSONValue) throws -> Write {
            .set(path: p, value: try PreparedValue(value, at: p, limits: .default))
        }
        switch roll {
        case 0..<28:
            return try set(list.appending(key), childJSON(&rng))
        case 28..<46:
            let sub = rng.pick([["s"], ["t"], ["n", "x"], ["s", "q"]])
            let value: JSONValue = rng.chance(0.2) ? .null : leafJSON(&rng)
            return try set(list.appending(key).appending(Path(sub.map(Key.init))), value)
        case 46..<60:
            var chosen: [String] = []
            for k in keys where rng.chance(0.25) { chosen.append(k) }
            var values: [(path: Path, value: PreparedValue)] = []
            for k in chosen {
                let relative = rng.chance(0.5) ? Path([Key(k)]) : Path([Key(k), Key(rng.pick(["s", "t"]))])
                let value: JSONValue =
                    relative.count == 1 ? childJSON(&rng) : (rng.chance(0.2) ? .null : leafJSON(&rng))
                values.append((relative, try PreparedValue(value, at: list.appending(relative), limits: .default)))
            }
            return try Write.update(at: list, values: values)
        case 60..<70:
            let target = list.appending(key)
            return .set(
                path: target.appending(Key.priority),
                value: try PreparedValue(priorityJSON(&rng), at: target, limits: .default))
        case 70..<73:
            return try set(list, listJSON(&rng))
        case 73..<75:
            return try set(list, rng.chance(0.5) ? .null : withPriority(leafJSON(&rng), &rng))
        case 75..<78:
            return .set(
                path: list.appending(Key.priority),
                value: try PreparedValue(priorityJSON(&rng), at: list, limits: .default))
        case 78..<84:
            let values: [(path: Path, value: PreparedValue)] = [
                (
                    Path([Key("list"), key]),
                    try PreparedValue(childJSON(&rng), at: list.appending(key), limits: .default)
                ),
                (Path([Key("other")]), try PreparedValue(leafJSON(&rng), at: try path("/other"), limits: .default)),
            ]
            return try Write.update(at: .root, values: values)
        case 84..<89:
            return try set(path("/other"), rng.chance(0.3) ? .null : leafJSON(&rng))
        case 89..<93:
            return try set(path("/list/a"), withPriority(leafJSON(&rng), &rng))
        default:
            return .set(path: list.appending(key), value: PreparedValue(node: .empty))
        }
    }
}
