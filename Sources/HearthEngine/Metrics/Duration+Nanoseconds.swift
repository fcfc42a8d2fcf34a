extension Duration {
    /// The duration in whole nanoseconds (saturating at `Int64.max`, some 292 years).
    var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// The duration in whole microseconds (saturating like `inNanoseconds`).
    package var inMicroseconds: Int64 { inNanoseconds / 1000 }
}
