import HearthCore
import HearthJSON

/// A deterministic stream of varied writes (sets, updates, removals, priorities, server values,
/// unicode, doubles) applied to a reference database, for comparing recovered states.
struct Workload {
    private var state: UInt64
    /// The reference: every write generated so far applied in order.
    private(set) var database = Database()

    init(seed: UInt64) { state = seed }

    private mutating func random(_ bound: Int) -> Int {
        // SplitMix64.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }

    private static func value(_ json: String, at path: Path) -> PreparedValue {
        // The workload only builds valid JSON.
        guard let parsed = try? JSONParser.parse(json),
            let value = try? PreparedValue(parsed, at: path, limits: .default)
        else { fatalError("invalid workload JSON \(json)") }
        return value
    }

    private static func path(_ text: String) -> Path {
        guard let path = try? Path.parse(text, allowPriority: true) else { fatalError("invalid workload path \(text)") }
        return path
    }

    /// The next write, applied to `database`.
    mutating func next() -> CommittedWrite {
        let r = random(1_000_000)
        let write: Write
        switch random(7) {
        case 0:
            let p = Self.path("/items/k\(r % 40)")
            write = .set(
                path: p,
                value: Self.value(
                    #"{"n":\#(r),"s":"h\u00e9llo \#(r) ✓","f":\#(Double(r) / 7),"b":true,"l":[1,2,{"x":null}]}"#, at: p)
            )
        case 1:
            let values: [(path: Path, value: PreparedValue)] = [
                (Self.path("counters/c\(r % 5)"), Self.value("\(r)", at: Self.path("/counters/c\(r % 5)"))),
                (Self.path("items/k\(r % 40)/n"), Self.value("-\(r)", at: Self.path("/items/k\(r % 40)/n"))),
            ]
            guard let update = try? Write.update(at: .root, values: values) else { fatalError("invalid update") }
            write = update
        case 2:
            let p = Self.path("/items/k\(r % 40)")
            write = .set(path: p, value: Self.value("null", at: p))
        case 3:
            let p = Self.path("/items/k\(r % 40)/.priority")
            write = .set(path: p, value: Self.value(r % 2 == 0 ? "\(r)" : #""p\#(r)""#, at: p))
        case 4:
            let p = Self.path("/deep/a\(r % 3)/b/c")
            write = .set(path: p, value: Self.value(#"{".value":"v\#(r)",".priority":\#(r % 10)}"#, at: p))
        case 5:
            let p = Self.path("/clock")
            write = .set(path: p, value: Self.value(#"{"at":{".sv":"timestamp"},"n":{".sv":{"increment":1}}}"#, at: p))
        default:
            let p = Self.path("/log/e\(database.rev)")
            write = .set(path: p, value: Self.value(#""\#(String(repeating: "x", count: r % 300))""#, at: p))
        }
        switch database.apply(write, now: 1_700_000_000_000 + Int64(database.rev)) {
        case .committed(let logged, _): return logged
        case .stale: fatalError("the workload has no transactions")
        }
    }

    /// The next `count` writes.
    mutating func batch(_ count: Int) -> [CommittedWrite] {
        (0..<count).map { _ in next() }
    }
}
