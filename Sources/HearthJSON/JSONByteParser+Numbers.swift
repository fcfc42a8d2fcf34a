/// Exact powers of ten for the fast number path (every one is exactly representable).
private let exactPowersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

/// Numbers: integers exactly, other numbers correctly rounded.
extension _JSONByteParser {
    @inline(__always)
    func isDigit(_ j: Int) -> Bool {
        j < end && bytes[j] &- UInt8(ascii: "0") < 10
    }

    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = pos
        var i = pos
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }

        // All digits of the integer and fraction parts, while they fit.
        var mantissa: UInt64 = 0
        var mantissaOverflowed = false

        guard isDigit(i) else { throw unexpected(at: i, expecting: "a digit") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { throw leadingZero(at: i) }
        } else {
            while isDigit(i) {
                accumulate(&mantissa, &mantissaOverflowed, bytes[i])
                i += 1
            }
        }

        var isInteger = true
        var fractionDigits = 0
        if i < end && bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard isDigit(i) else { throw unexpected(at: i, expecting: "a digit") }
            while isDigit(i) {
                accumulate(&mantissa, &mantissaOverflowed, bytes[i])
                fractionDigits += 1
                i += 1
            }
        }

        var exponent = 0
        if i < end && (bytes[i] | 0x20) == UInt8(ascii: "e") {
            isInteger = false
            i += 1
            var exponentNegative = false
            if i < end && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) {
                exponentNegative = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            guard isDigit(i) else { throw unexpected(at: i, expecting: "a digit") }
            while isDigit(i) {
                // Saturate: anything this large takes the slow path anyway.
                if exponent < 1_000_000 { exponent = exponent * 10 + Int(bytes[i] &- UInt8(ascii: "0")) }
                i += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        pos = i

        if isInteger && !mantissaOverflowed {
            if negative {
                if mantissa <= UInt64(1) << 63 { return .int(Int64(bitPattern: 0 &- mantissa)) }
            } else if mantissa <= UInt64(Int64.max) {
                return .int(Int64(mantissa))
            }
        }

        var d: Double
        let exponent10 = exponent - fractionDigits
        if !mantissaOverflowed && mantissa <= UInt64(1) << 53 && exponent10 >= -22 && exponent10 <= 22 {
            // Clinger's fast path: both operands are exact, so one IEEE operation rounds correctly.
            d = Double(mantissa)
            if exponent10 >= 0 {
                d *= exactPowersOfTen[exponent10]
            } else {
                d /= exactPowersOfTen[-exponent10]
            }
            if negative { d = -d }
        } else {
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            // The text matches the JSON number grammar, which `Double.init` always accepts.
            d = Double(text) ?? .nan
            guard d.isFinite else { throw numberOutOfRange(at: start) }
        }
        if d == 0 { d = 0 }  // no negative zero
        return .double(d)
    }

    @inline(__always)
    func accumulate(_ mantissa: inout UInt64, _ overflowed: inout Bool, _ digit: UInt8) {
        if overflowed { return }
        let (times10, o1) = mantissa.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(UInt64(digit &- UInt8(ascii: "0")))
        if o1 || o2 { overflowed = true } else { mantissa = sum }
    }
}
