/// A JSON number as the database stores it: an exact 64-bit integer or a finite double.
///
/// Equality and order are numeric across the two cases (`1 == 1.0`), exact for int/int and for
/// mixed pairs (an Int64 beyond 2^53 is not rounded before comparing).
public enum Number: Sendable, CustomStringConvertible {
    case int(Int64)
    case double(Double)

    public var doubleValue: Double {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        }
    }

    public var description: String {
        switch self {
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        }
    }

    /// A number from a double, with `-0` (and `+0`) stored as the integer 0.
    public static func normalised(_ d: Double) -> Number {
        if d == 0 { return .int(0) }
        return .double(d)
    }

    /// Three-way numeric comparison.
    public static func compare(_ a: Number, _ b: Number) -> Int {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.double(let x), .double(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.int(let x), .double(let y)): return -compareDoubleToInt(y, x)
        case (.double(let x), .int(let y)): return compareDoubleToInt(x, y)
        }
    }

    /// Compares a finite double with an Int64 exactly.
    static func compareDoubleToInt(_ d: Double, _ i: Int64) -> Int {
        // Doubles at or beyond ±2^63 lie outside every Int64.
        if d >= 9.223372036854775808e18 { return 1 }
        if d < -9.223372036854775808e18 { return -1 }
        let truncated = Int64(d.rounded(.towardZero))
        if truncated != i { return truncated < i ? -1 : 1 }
        let fraction = d - d.rounded(.towardZero)
        return fraction > 0 ? 1 : (fraction < 0 ? -1 : 0)
    }

    /// `self + other` with the server-value increment rules: int + int stays int unless it
    /// overflows; anything involving a double is a double.
    public func adding(_ other: Number) -> Number {
        switch (self, other) {
        case (.int(let x), .int(let y)):
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? .double(Double(x) + Double(y)) : .int(sum)
        default:
            return Number.normalised(doubleValue + other.doubleValue)
        }
    }
}

extension Number: Equatable, Comparable {
    public static func == (a: Number, b: Number) -> Bool { compare(a, b) == 0 }
    public static func < (a: Number, b: Number) -> Bool { compare(a, b) < 0 }
}
