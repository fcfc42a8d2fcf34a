/// Chronological push ids (docs/PROTOCOL.md, "push"): 8 base-64 digits of milliseconds since the epoch,
/// then 12 random digits that are incremented when two ids share a millisecond, so the ids of
/// one generator sort strictly in creation order.
public struct PushIDGenerator: Sendable {
    public static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    private var lastTime: Int64 = -1
    private var lastRandom: [UInt8] = Array(repeating: 0, count: 12)

    public init() {}

    /// The 8-character timestamp prefix for `ms`.
    public static func timestampPrefix(_ ms: Int64) -> String {
        var digits = [UInt8](repeating: 0, count: 8)
        var t = ms
        for i in stride(from: 7, through: 0, by: -1) {
            digits[i] = alphabet[Int(t % 64)]
            t /= 64
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The next id for time `ms`, drawing randomness from `rng`.
    /// A clock that steps back is treated as standing still, so ids stay in creation order.
    public mutating func next<R: RandomNumberGenerator>(now clock: Int64, using rng: inout R) -> String {
        let ms = max(clock, lastTime)
        if ms == lastTime {
            var i = 11
            while i >= 0, lastRandom[i] == 63 {
                lastRandom[i] = 0
                i -= 1
            }
            if i >= 0 { lastRandom[i] += 1 }
        } else {
            lastTime = ms
            for i in 0..<12 { lastRandom[i] = UInt8.random(in: 0..<64, using: &rng) }
        }
        return Self.timestampPrefix(ms) + String(decoding: lastRandom.map { Self.alphabet[Int($0)] }, as: UTF8.self)
    }

    public mutating func next(now ms: Int64) -> String {
        var rng = SystemRandomNumberGenerator()
        return next(now: ms, using: &rng)
    }
}
