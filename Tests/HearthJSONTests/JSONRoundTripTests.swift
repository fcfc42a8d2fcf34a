import HearthJSON
import XCTest

/// A small deterministic generator (SplitMix64) so that failures are reproducible.
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

    /// Uniform-enough integer in `0..<n` (`n > 0`).
    mutating func next(upTo n: Int) -> Int { Int(next() % UInt64(n)) }

    mutating func nextBool() -> Bool { next() & 1 == 1 }

    mutating func pick<T>(_ choices: [T]) -> T { choices[next(upTo: choices.count)] }
}

/// Equality that is stricter than `==`: doubles by bit pattern, strings by UTF-8 (not by
/// canonical equivalence), member order and duplicates significant.
func bitExactEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.int(let x), .int(let y)): return x == y
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
    case (.array(let x), .array(let y)):
        return x.count == y.count && zip(x, y).allSatisfy { bitExactEqual($0, $1) }
    case (.object(let x), .object(let y)):
        return x.count == y.count
            && zip(x, y).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && bitExactEqual($0.value, $1.value) }
    default: return false
    }
}

/// Random JSON documents.
struct DocumentGenerator {
    var rng: SplitMix64
    var maxDepth = 5

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func document() -> JSONValue {
        // Mostly containers at the top, sometimes a bare scalar.
        rng.next(upTo: 10) == 0 ? scalar() : container(depth: 1)
    }

    mutating func value(depth: Int) -> JSONValue {
        if depth >= maxDepth || rng.next(upTo: 3) != 0 { return scalar() }
        return container(depth: depth + 1)
    }

    mutating func container(depth: Int) -> JSONValue {
        let count = rng.next(upTo: 3) == 0 ? 0 : rng.next(upTo: 8)
        if rng.nextBool() {
            return .array((0..<count).map { _ in value(depth: depth) })
        }
        var members: [JSONMember] = []
        for _ in 0..<count {
            // Sometimes repeat an earlier key: duplicates must survive in order.
            let key = !members.isEmpty && rng.next(upTo: 6) == 0 ? rng.pick(members).key : string()
            members.append(JSONMember(key, value(depth: depth)))
        }
        return .object(members)
    }

    mutating func scalar() -> JSONValue {
        switch rng.next(upTo: 7) {
        case 0: return .null
        case 1: return .bool(rng.nextBool())
        case 2, 3: return .int(int())
        case 4, 5: return .double(double())
        default: return .string(string())
        }
    }

    mutating func int() -> Int64 {
        switch rng.next(upTo: 4) {
        case 0:
            return rng.pick([Int64.min, Int64.max, Int64.min + 1, Int64.max - 1, 0, 1, -1, 9_007_199_254_740_993])
        case 1: return Int64(rng.next(upTo: 2_001)) - 1_000
        case 2: return Int64(bitPattern: rng.next())
        default: return Int64(bitPattern: rng.next()) >> Int64(rng.next(upTo: 64))
        }
    }

    mutating func double() -> Double {
        let d: Double
        switch rng.next(upTo: 6) {
        case 0:
            d = rng.pick([
                Double.leastNonzeroMagnitude, -Double.leastNonzeroMagnitude, Double.leastNormalMagnitude,
                Double.leastNormalMagnitude.nextDown, Double.greatestFiniteMagnitude,
                -Double.greatestFiniteMagnitude, 0.0, 0.1, 0.2, 0.3, 1.0 / 3.0, 3.0, -3.0, 1e15, 1e16, 1e22,
                1e23, 9_007_199_254_740_992.0, 9_223_372_036_854_775_808.0, -9_223_372_036_854_775_808.0,
                1e-7, 123.456, Double(bitPattern: 5_060),
            ])
        case 1:
            // Subnormal.
            d = Double(bitPattern: rng.next() & 0x800F_FFFF_FFFF_FFFF)
        case 2:
            // Integral values, which must stay doubles.
            d = Double(Int64(bitPattern: rng.next()) >> Int64(rng.next(upTo: 64)))
        case 3:
            // Short decimals.
            d =
                Double(Int64(rng.next(upTo: 2_000_001)) - 1_000_000)
                / Double(rng.pick([1, 10, 100, 1000, 1e6] as [Double]))
        default:
            // Any finite bit pattern: tiny, huge and everything in between.
            var candidate = Double(bitPattern: rng.next())
            while !candidate.isFinite { candidate = Double(bitPattern: rng.next()) }
            d = candidate
        }
        // Negative zero does not survive (it is written and read as 0.0); see the writer tests.
        return d == 0 ? 0.0 : d
    }

    mutating func scalarForString() -> Unicode.Scalar {
        let v: UInt32
        switch rng.next(upTo: 10) {
        case 0: v = UInt32(rng.next(upTo: 0x20))  // control characters
        case 1: v = rng.pick([0x22, 0x5C, 0x2F, 0x7F, 0x2028, 0x2029, 0x2027, 0x202A, 0xFEFF, 0xFFFD, 0xFFFF])
        case 2: v = 0x80 + UInt32(rng.next(upTo: 0x780))  // two-byte
        case 3: v = 0x300 + UInt32(rng.next(upTo: 0x70))  // combining marks
        case 4:
            // BMP, skipping surrogates.
            var x = 0x800 + UInt32(rng.next(upTo: 0x10000 - 0x800))
            while (0xD800...0xDFFF).contains(x) { x = 0x800 + UInt32(rng.next(upTo: 0x10000 - 0x800)) }
            v = x
        case 5, 6: v = 0x10000 + UInt32(rng.next(upTo: 0x100000))  // astral
        default: v = 0x20 + UInt32(rng.next(upTo: 0x5F))  // printable ASCII
        }
        return Unicode.Scalar(v)!
    }

    mutating func string() -> String {
        var s = String.UnicodeScalarView()
        let length = rng.next(upTo: 4) == 0 ? rng.next(upTo: 60) : rng.next(upTo: 12)
        for _ in 0..<length {
            if rng.next(upTo: 3) == 0 {
                s.append(scalarForString())
            } else {
                s.append(Unicode.Scalar(UInt8(0x61 + rng.next(upTo: 26))))
            }
        }
        return String(s)
    }
}

/// Writes `value` as valid but non-canonical JSON: random whitespace, escapes in place of raw
/// characters (with surrogate pairs for astral scalars), upper-case exponents.
struct NoisyWriter {
    var rng: SplitMix64

    mutating func whitespace(into out: inout [UInt8]) {
        for _ in 0..<(rng.next(upTo: 3) == 0 ? rng.next(upTo: 4) : 0) {
            out.append(rng.pick([0x20, 0x09, 0x0A, 0x0D]))
        }
    }

    mutating func hex4(_ v: UInt32, into out: inout [UInt8]) {
        let upper = rng.nextBool()
        out.append(contentsOf: Array("\\u".utf8))
        for shift in stride(from: 12, through: 0, by: -4) {
            let nibble = UInt8((v >> UInt32(shift)) & 0xF)
            out.append(nibble < 10 ? 0x30 + nibble : (upper ? 0x41 : 0x61) + nibble - 10)
        }
    }

    mutating func string(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        for scalar in s.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || v == 0x22 || v == 0x5C || rng.next(upTo: 5) == 0 {
                if v == 0x2F && rng.nextBool() {
                    out.append(contentsOf: Array("\\/".utf8))
                } else if v >= 0x10000 {
                    let u = v - 0x10000
                    hex4(0xD800 + (u >> 10), into: &out)
                    hex4(0xDC00 + (u & 0x3FF), into: &out)
                } else {
                    hex4(v, into: &out)
                }
            } else {
                out.append(contentsOf: Array(String(scalar).utf8))
            }
        }
        out.append(0x22)
    }

    mutating func write(_ value: JSONValue, into out: inout [UInt8]) {
        whitespace(into: &out)
        switch value {
        case .double(let d):
            var text: [UInt8] = []
            JSONWriter.writeDouble(d, into: &text)
            if rng.nextBool() { text = text.map { $0 == UInt8(ascii: "e") ? UInt8(ascii: "E") : $0 } }
            out.append(contentsOf: text)
        case .string(let s):
            string(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            whitespace(into: &out)
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            whitespace(into: &out)
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                whitespace(into: &out)
                string(member.key, into: &out)
                whitespace(into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        default:
            value.serialize(into: &out)
        }
        whitespace(into: &out)
    }
}

final class JSONRoundTripTests: XCTestCase {
    /// parse(serialize(v)) == v bit for bit, and serializing again gives the same bytes.
    func testRandomDocumentsRoundTrip() throws {
        for seed in 0..<UInt64(2_000) {
            var generator = DocumentGenerator(seed: seed)
            let value = generator.document()
            let text = value.serialized
            let parsed: JSONValue
            do throws(JSONError) {
                parsed = try JSONParser.parse(text)
            } catch {
                XCTFail("seed \(seed): \(error) in \(String(decoding: text, as: UTF8.self))")
                continue
            }
            XCTAssertTrue(bitExactEqual(parsed, value), "seed \(seed): \(String(decoding: text, as: UTF8.self))")
            XCTAssertEqual(parsed.serialized, text, "seed \(seed)")
            XCTAssertEqual(try JSONParser.parse(value.jsonString).serialized, text, "seed \(seed)")
        }
    }

    /// Non-canonical spellings of a document (whitespace, escapes, surrogate pairs, `E`) parse to
    /// the same value, and serialize(parse(text)) is the canonical text, a fixed point.
    func testNoisyTextsNormalise() throws {
        for seed in 0..<UInt64(2_000) {
            var generator = DocumentGenerator(seed: seed &+ 1_000_000)
            let value = generator.document()
            var noisy = NoisyWriter(rng: SplitMix64(seed: seed))
            var text: [UInt8] = []
            noisy.write(value, into: &text)
            let parsed: JSONValue
            do throws(JSONError) {
                parsed = try JSONParser.parse(text)
            } catch {
                XCTFail("seed \(seed): \(error) in \(String(decoding: text, as: UTF8.self))")
                continue
            }
            XCTAssertTrue(bitExactEqual(parsed, value), "seed \(seed): \(String(decoding: text, as: UTF8.self))")
            let canonical = parsed.serialized
            XCTAssertEqual(canonical, value.serialized, "seed \(seed)")
            XCTAssertEqual(try JSONParser.parse(canonical).serialized, canonical, "seed \(seed)")
        }
    }

    /// Corrupted documents never crash the parser; errors point inside the input, and whatever
    /// is accepted re-serializes stably.
    func testMutatedDocumentsNeverCrash() throws {
        var rng = SplitMix64(seed: 0xF022)
        let specials: [UInt8] = [
            0x22, 0x5C, 0x5B, 0x5D, 0x7B, 0x7D, 0x2C, 0x3A, 0x2D, 0x2E, 0x65, 0x30, 0x00, 0x1F, 0x80, 0xC3,
            0xE2, 0xED, 0xF0, 0xF4, 0xFF, 0x75, 0x20,
        ]
        var accepted = 0
        for seed in 0..<UInt64(1_500) {
            var generator = DocumentGenerator(seed: seed &+ 2_000_000)
            var bytes = generator.document().serialized
            for _ in 0..<(1 + rng.next(upTo: 3)) {
                guard !bytes.isEmpty else { break }
                let i = rng.next(upTo: bytes.count)
                switch rng.next(upTo: 4) {
                case 0: bytes[i] = rng.pick(specials)
                case 1: bytes.insert(rng.pick(specials), at: i)
                case 2: bytes.remove(at: i)
                default: bytes.removeSubrange(i...)
                }
            }
            do throws(JSONError) {
                let value = try JSONParser.parse(bytes)
                accepted += 1
                let text = value.serialized
                XCTAssertEqual(try JSONParser.parse(text).serialized, text)
            } catch {
                XCTAssertTrue((0...bytes.count).contains(error.offset), "\(error)")
                XCTAssertTrue(error.message.contains("byte \(error.offset)"), error.message)
            }
        }
        XCTAssertGreaterThan(accepted, 0)
    }

    func testSpecificRoundTrips() throws {
        let values: [JSONValue] = [
            .int(Int64.min), .int(Int64.max), .double(3.0), .double(-3.0), .double(1e16),
            .double(.leastNonzeroMagnitude),
            .double(Double.greatestFiniteMagnitude), .double(9_223_372_036_854_775_808.0),
            .string("😀"), .string("\u{0}\u{1F}\u{7F}\u{2028}\u{2029}\u{10FFFF}"), .string("e\u{301}"), .string("é"),
            .object([JSONMember("k", .null), JSONMember("k", .bool(false))]),
        ]
        for value in values {
            let parsed = try JSONParser.parse(value.serialized)
            XCTAssertTrue(bitExactEqual(parsed, value), value.jsonString)
        }
        // -0.0 is written as 0.0 and comes back as positive zero.
        guard case .double(let zero) = try JSONParser.parse(JSONValue.double(-0.0).serialized) else {
            return XCTFail("not a double")
        }
        XCTAssertEqual(zero.bitPattern, 0)
        // é and e + U+0301 are == as Swift strings but must stay distinct through a round trip.
        let a = try JSONParser.parse(JSONValue.string("é").serialized)
        let b = try JSONParser.parse(JSONValue.string("e\u{301}").serialized)
        XCTAssertNotEqual(
            a.stringValue.map { Array($0.unicodeScalars) }, b.stringValue.map { Array($0.unicodeScalars) })
    }
}
