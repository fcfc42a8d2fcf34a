import HearthCore
import HearthJSON

/// A deterministic stream of onDisconnect changes made by the real `OnDisconnectQueue` for a few
/// connections — sets, updates with server values, cancels, queues that run — with the live
/// registrations they leave as the reference.
struct RegistrationWorkload {
    private var state: UInt64
    private(set) var queues: [Int: OnDisconnectQueue] = [:]
    var nextID: UInt64 = 1
    private var nextConnection = 0

    init(seed: UInt64, nextID: UInt64 = 1) {
        state = seed
        self.nextID = nextID
    }

    private mutating func random(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }

    private static func path(_ text: String) -> Path {
        guard let path = try? Path.parse(text) else { fatalError("invalid workload path \(text)") }
        return path
    }

    /// The live registrations, in id order.
    var live: [OnDisconnectRegistration] {
        queues.values.flatMap(\.entries).sorted { $0.id < $1.id }
    }

    /// The next change (never empty).
    mutating func next() -> OnDisconnectChange {
        while true {
            let change = attempt()
            if !change.isEmpty { return change }
        }
    }

    private mutating func attempt() -> OnDisconnectChange {
        let r = random(1_000_000)
        if queues.isEmpty || random(4) == 0 {
            nextConnection += 1
            queues[nextConnection] = OnDisconnectQueue()
        }
        let keys = queues.keys.sorted()
        let connection = keys[random(keys.count)]
        var queue = queues[connection] ?? OnDisconnectQueue()
        let auth: AuthContext? =
            switch r % 3 {
            case 0: nil
            case 1: .admin
            default:
                AuthContext(
                    uid: "u\(connection)", provider: "password", claims: .object(["role": .string("é ✓ \(r)")]),
                    expiresAt: r % 2 == 0 ? nil : 1_700_000_000_000 + Int64(r))
            }
        let change: OnDisconnectChange
        switch random(6) {
        case 0, 1:
            change = queue.set(
                Self.path("/presence/c\(connection)"), .string(r % 2 == 0 ? "offline" : "gone \(r)"), auth: auth,
                nextID: &nextID)
        case 2:
            change = queue.update(
                Self.path("/status/c\(connection)"),
                [
                    (Self.path("lastSeen"), .object([".sv": .string("timestamp")])),
                    (Self.path("visits"), .object([".sv": .object(["increment": .int(1)])])),
                    (Self.path("n"), .double(Double(r) / 7)),
                ], auth: auth, nextID: &nextID)
        case 3:
            change = queue.set(
                Self.path("/rooms/r\(r % 3)/c\(connection)"),
                .object(["a": .int(Int64(r)), "b": .array([.bool(true), .null])]), auth: auth, nextID: &nextID)
        case 4:
            change = queue.cancel(Self.path(r % 2 == 0 ? "/status/c\(connection)/visits" : "/rooms/r\(r % 3)"))
        default:
            // The connection ends: its queue runs and is gone.
            change = queue.removal
            queues[connection] = nil
            return change
        }
        queues[connection] = queue
        return change
    }
}
