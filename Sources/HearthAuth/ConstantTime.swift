/// Comparison whose running time does not depend on where two byte strings differ.
public enum ConstantTime {
    /// Whether `a` equals `b`; looks at every byte of `a` whatever the contents.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        if a.count != b.count { difference |= 1 }
        for i in a.indices {
            difference |= a[i] ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0
    }
}
