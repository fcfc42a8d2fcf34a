/// String operations of rules (docs/rules.md, "Operators" and "Methods"), on code units, never on Swift's canonical
/// equivalence.
enum RuleStrings {
    /// JavaScript's `String(n)`: `123`, `-0.5`, `1.1`, `1e+21`, `NaN`, `Infinity`; never `123.0`.
    static func javaScript(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        if value == 0 { return "0" }
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        // Swift's description is the shortest round-trip decimal, like JavaScript's; only its
        // layout differs. Take its digits and exponent and lay them out as ECMAScript does.
        let text = abs(value).description
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...]) ?? 0
        }
        var digits: [UInt8] = []
        var integerDigits = 0
        var seenDot = false
        for byte in mantissa.utf8 {
            if byte == UInt8(ascii: ".") {
                seenDot = true
            } else {
                digits.append(byte)
                if !seenDot { integerDigits += 1 }
            }
        }
        var n = integerDigits + exponent
        while let first = digits.first, first == UInt8(ascii: "0") {
            digits.removeFirst()
            n -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0") { digits.removeLast() }
        let k = digits.count
        let s = String(decoding: digits, as: UTF8.self)
        var out = value < 0 ? "-" : ""
        if k <= n, n <= 21 {
            out += s + String(repeating: "0", count: n - k)
        } else if 0 < n, n <= 21 {
            out += String(decoding: digits[0..<n], as: UTF8.self) + "." + String(decoding: digits[n...], as: UTF8.self)
        } else if -6 < n, n <= 0 {
            out += "0." + String(repeating: "0", count: -n) + s
        } else {
            let e = n - 1
            let sign = e < 0 ? "-" : "+"
            if k == 1 {
                out += s
            } else {
                out +=
                    String(decoding: digits[0..<1], as: UTF8.self) + "." + String(decoding: digits[1...], as: UTF8.self)
            }
            out += "e" + sign + String(abs(e))
        }
        return out
    }

    /// Whether `needle` occurs in `haystack` (UTF-8 bytes; equal to a UTF-16 search for valid
    /// strings). Linear time (Knuth–Morris–Pratt) for long needles.
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        var h = haystack
        var n = needle
        return h.withUTF8 { hb in n.withUTF8 { nb in firstIndex(of: nb, in: hb, from: 0) != nil } }
    }

    static func beginsWith(_ s: String, _ prefix: String) -> Bool {
        s.utf8.starts(with: prefix.utf8)
    }

    static func endsWith(_ s: String, _ suffix: String) -> Bool {
        let a = s.utf8
        let b = suffix.utf8
        guard b.count <= a.count else { return false }
        return a.dropFirst(a.count - b.count).elementsEqual(b)
    }

    /// Every occurrence of the literal `target` replaced (docs/rules.md, "Methods"); an empty target inserts the
    /// replacement around every character, as Java's `replace` does (docs/rules.md, "Differences from Firebase").
    static func replace(_ s: String, _ target: String, _ replacement: String) -> String {
        if target.isEmpty {
            var out = replacement
            for scalar in s.unicodeScalars {
                out.unicodeScalars.append(scalar)
                out += replacement
            }
            return out
        }
        var text = s
        var target = target
        var replacement = replacement
        return text.withUTF8 { bytes in
            target.withUTF8 { needle in
                replacement.withUTF8 { with in
                    var out: [UInt8] = []
                    var start = 0
                    while let found = firstIndex(of: needle, in: bytes, from: start) {
                        out.append(contentsOf: bytes[start..<found])
                        out.append(contentsOf: with)
                        start = found + needle.count
                    }
                    if start == 0 { return s }
                    out.append(contentsOf: bytes[start...])
                    return String(decoding: out, as: UTF8.self)
                }
            }
        }
    }

    /// The first index of `needle` in `haystack` at or after `start`.
    static func firstIndex(
        of needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>, from start: Int
    ) -> Int? {
        let m = needle.count
        if m == 0 { return start <= haystack.count ? start : nil }
        guard haystack.count - start >= m else { return nil }
        if m <= 16 {
            var i = start
            let last = haystack.count - m
            let first = needle[0]
            while i <= last {
                if haystack[i] == first {
                    var j = 1
                    while j < m, haystack[i + j] == needle[j] { j += 1 }
                    if j == m { return i }
                }
                i += 1
            }
            return nil
        }
        var failure = Array(repeating: 0, count: m)
        var k = 0
        for i in 1..<m {
            while k > 0, needle[i] != needle[k] { k = failure[k - 1] }
            if needle[i] == needle[k] { k += 1 }
            failure[i] = k
        }
        var matched = 0
        for i in start..<haystack.count {
            while matched > 0, haystack[i] != needle[matched] { matched = failure[matched - 1] }
            if haystack[i] == needle[matched] { matched += 1 }
            if matched == m { return i - m + 1 }
        }
        return nil
    }
}
