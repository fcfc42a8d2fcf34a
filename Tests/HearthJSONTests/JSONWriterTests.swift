import HearthJSON
import XCTest

private func written(_ write: (inout [UInt8]) -> Void) -> String {
    var buffer: [UInt8] = []
    write(&buffer)
    return String(decoding: buffer, as: UTF8.self)
}

private func quoted(_ s: String) -> String {
    written { JSONWriter.writeString(s, into: &$0) }
}

final class JSONWriterTests: XCTestCase {
    func testLiterals() {
        XCTAssertEqual(written { JSONWriter.writeNull(into: &$0) }, "null")
        XCTAssertEqual(written { JSONWriter.writeBool(true, into: &$0) }, "true")
        XCTAssertEqual(written { JSONWriter.writeBool(false, into: &$0) }, "false")
    }

    func testIntegers() {
        let cases: [(Int64, String)] = [
            (0, "0"), (7, "7"), (9, "9"), (10, "10"), (-1, "-1"), (-9, "-9"), (-10, "-10"),
            (123, "123"), (1_000_000, "1000000"), (-987_654_321, "-987654321"),
            (Int64.max, "9223372036854775807"), (Int64.min, "-9223372036854775808"),
            (Int64.min + 1, "-9223372036854775807"), (1_000_000_000_000_000_000, "1000000000000000000"),
        ]
        for (value, text) in cases {
            XCTAssertEqual(written { JSONWriter.writeInt(value, into: &$0) }, text)
        }
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let value = Int64(bitPattern: rng.next()) >> Int64(rng.next(upTo: 64))
            XCTAssertEqual(written { JSONWriter.writeInt(value, into: &$0) }, String(value))
        }
    }

    /// Doubles keep a fraction or exponent (so they read back as doubles) and use the shortest
    /// round-trip digits.
    func testDoubles() {
        let cases: [(Double, String)] = [
            (3.0, "3.0"), (1.0, "1.0"), (-1.0, "-1.0"), (100.0, "100.0"), (0.1, "0.1"), (-2.5, "-2.5"),
            (0.0, "0.0"), (-0.0, "0.0"), (1e15, "1000000000000000.0"), (1e16, "1e+16"),
            (9_007_199_254_740_992.0, "9007199254740992.0"), (9_223_372_036_854_775_808.0, "9.223372036854776e+18"),
            (1e-5, "1e-05"), (0.0001, "0.0001"), (123.456, "123.456"),
            (0.30000000000000004, "0.30000000000000004"),
            (Double.leastNonzeroMagnitude, "5e-324"),
            (Double.leastNormalMagnitude, "2.2250738585072014e-308"),
            (Double.greatestFiniteMagnitude, "1.7976931348623157e+308"),
            (-Double.greatestFiniteMagnitude, "-1.7976931348623157e+308"),
        ]
        for (value, text) in cases {
            XCTAssertEqual(written { JSONWriter.writeDouble(value, into: &$0) }, text)
        }
    }

    func testDoublesReadBackAsIdenticalDoubles() throws {
        var rng = SplitMix64(seed: 99)
        var samples: [Double] = [
            3, -3, 1e16, 1e300, Double(bitPattern: 4), Double(bitPattern: 0x0001_2345_6789_ABCD), 0.1, 1 / 3.0,
            4_503_599_627_370_496.5,
        ]
        while samples.count < 5_000 {
            let d = Double(bitPattern: rng.next())
            if d.isFinite { samples.append(d) }
        }
        for d in samples {
            let bytes = written { JSONWriter.writeDouble(d, into: &$0) }
            guard case .double(let back) = try JSONParser.parse(bytes) else {
                XCTFail("\(bytes) did not read back as a double")
                continue
            }
            let expected = d == 0 ? 0.0 : d
            XCTAssertEqual(back.bitPattern, expected.bitPattern, bytes)
            XCTAssertLessThanOrEqual(bytes.utf8.count, 24, bytes)
        }
    }

    func testPlainStrings() {
        XCTAssertEqual(quoted(""), #""""#)
        XCTAssertEqual(quoted("abc"), #""abc""#)
        XCTAssertEqual(quoted("a/b"), #""a/b""#)
        XCTAssertEqual(quoted("\u{7F}"), "\"\u{7F}\"")
        XCTAssertEqual(quoted("é€😀 e\u{301}"), "\"é€😀 e\u{301}\"")
        XCTAssertEqual(quoted("\u{FFFF}\u{10FFFF}"), "\"\u{FFFF}\u{10FFFF}\"")
        // Neighbours of U+2028/2029 stay raw.
        XCTAssertEqual(quoted("\u{2027}\u{202A}\u{2008}\u{20AC}"), "\"\u{2027}\u{202A}\u{2008}\u{20AC}\"")
    }

    func testEscapedStrings() {
        XCTAssertEqual(quoted("a\"b"), #""a\"b""#)
        XCTAssertEqual(quoted("a\\b"), #""a\\b""#)
        XCTAssertEqual(quoted("\u{08}\u{0C}\n\r\t"), #""\b\f\n\r\t""#)
        XCTAssertEqual(quoted("\u{0}"), #""\u0000""#)
        XCTAssertEqual(quoted("\u{1}\u{1F}\u{1B}\u{0B}"), #""\u0001\u001f\u001b\u000b""#)
        XCTAssertEqual(quoted("\u{2028}"), #""\u2028""#)
        XCTAssertEqual(quoted("a\u{2029}b\u{2028}"), #""a\u2029b\u2028""#)
        XCTAssertEqual(quoted("\"\\\""), #""\"\\\"""#)
    }

    func testEveryControlCharacter() throws {
        for c in 0..<0x20 {
            let s = String(Unicode.Scalar(UInt8(c)))
            let text = quoted(s)
            let expected: String
            switch c {
            case 0x08: expected = #""\b""#
            case 0x09: expected = #""\t""#
            case 0x0A: expected = #""\n""#
            case 0x0C: expected = #""\f""#
            case 0x0D: expected = #""\r""#
            default:
                let hex = String(c, radix: 16)
                expected = "\"\\u00" + (hex.count == 1 ? "0" + hex : hex) + "\""
            }
            XCTAssertEqual(text, expected)
            XCTAssertEqual(try JSONParser.parse(text), .string(s))
        }
    }

    /// Exercises the eight-bytes-at-a-time scan with the special byte at every alignment.
    func testSpecialCharactersAtEveryPosition() throws {
        for n in 0..<40 {
            let a = String(repeating: "a", count: n)
            let b = String(repeating: "b", count: 40 - n)
            XCTAssertEqual(quoted(a + b), "\"\(a)\(b)\"")
            XCTAssertEqual(quoted(a + "\"" + b), "\"\(a)\\\"\(b)\"")
            XCTAssertEqual(quoted(a + "\n" + b), "\"\(a)\\n\(b)\"")
            XCTAssertEqual(quoted(a + "\u{1}" + b), "\"\(a)\\u0001\(b)\"")
            XCTAssertEqual(quoted(a + "\u{2028}" + b), "\"\(a)\\u2028\(b)\"")
            XCTAssertEqual(quoted(a + "é" + b), "\"\(a)é\(b)\"")
            XCTAssertEqual(quoted(a + "\u{E2}"), "\"\(a)\u{E2}\"")  // â: C3 A2
            // U+2010 shares the E2 80 prefix with U+2028 but stays raw.
            XCTAssertEqual(quoted(a + "\u{2010}"), "\"\(a)\u{2010}\"")
            XCTAssertEqual(try JSONParser.parse(quoted(a + "\"\\\u{2028}" + b)), .string(a + "\"\\\u{2028}" + b))
        }
    }

    /// The last bytes of a string, fewer than a word, are scanned as one (zero-padded) word: a
    /// special byte among them is found wherever it stands, and the padding is not taken for one.
    func testSpecialCharactersInTheLastBytesOfAString() throws {
        let specials = [("\"", #"\""#), ("\\", #"\\"#), ("\n", #"\n"#), ("\u{0}", #"\u0000"#), ("é", "é")]
        for n in 0..<20 {
            let a = String(repeating: "a", count: n)
            XCTAssertEqual(quoted(a), "\"\(a)\"")
            for (raw, escaped) in specials {
                for tail in ["", "b", "bcdefg"] {
                    XCTAssertEqual(quoted(a + raw + tail), "\"\(a)\(escaped)\(tail)\"")
                    XCTAssertEqual(try JSONParser.parse(quoted(a + raw + tail)), .string(a + raw + tail))
                }
            }
        }
    }

    /// `writesAsIs` says exactly when `writeStringContents` copies a string unchanged, at every
    /// alignment of the byte that decides it.
    func testWritesAsIsIsExactlyWhenTheContentsAreCopied() {
        let pieces = ["", "b", "\"", "\\", "\n", "\u{1}", "\u{7F}", "é", "\u{2028}", "\u{2029}", "\u{2010}", "€", "😀"]
        for n in 0..<20 {
            let a = String(repeating: "a", count: n)
            for piece in pieces {
                for tail in ["", "c", "cdefghij"] {
                    var text = a + piece + tail
                    text.withUTF8 { utf8 in
                        var written: [UInt8] = []
                        JSONWriter.writeStringContents(utf8: utf8, into: &written)
                        XCTAssertEqual(
                            JSONWriter.writesAsIs(utf8: utf8), written.elementsEqual(utf8), "\(a)+\(piece)+\(tail)")
                    }
                }
            }
        }
    }

    func testWritersAppend() {
        var buffer = Array("[".utf8)
        JSONWriter.writeString("x", into: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONWriter.writeInt(-5, into: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONWriter.writeDouble(0.5, into: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONWriter.writeBool(true, into: &buffer)
        buffer.append(UInt8(ascii: ","))
        JSONWriter.writeNull(into: &buffer)
        buffer.append(UInt8(ascii: "]"))
        XCTAssertEqual(String(decoding: buffer, as: UTF8.self), #"["x",-5,0.5,true,null]"#)
    }

    func testStringOverloads() {
        let s = "ab\"cd\u{2029}ef"
        let expected = quoted(s)
        XCTAssertEqual(expected, #""ab\"cd\u2029ef""#)
        let sub = ("xx" + s + "yy").dropFirst(2).dropLast(2)
        XCTAssertEqual(written { JSONWriter.writeString(sub, into: &$0) }, expected)
        let bytes = Array(s.utf8)
        XCTAssertEqual(
            written { buffer in bytes.withUnsafeBufferPointer { JSONWriter.writeString(utf8: $0, into: &buffer) } },
            expected)
        XCTAssertEqual(
            written { JSONWriter.writeString(utf8: UnsafeBufferPointer(start: nil, count: 0), into: &$0) }, #""""#)
    }

    func testLongStringGrowsBufferCorrectly() throws {
        var buffer: [UInt8] = []
        var expected = ""
        for i in 0..<1_000 {
            if i > 0 {
                buffer.append(UInt8(ascii: ","))
                expected += ","
            }
            let s = String(repeating: "x\u{1}y\"é", count: i % 37)
            JSONWriter.writeString(s, into: &buffer)
            expected += quoted(s)
        }
        XCTAssertEqual(String(decoding: buffer, as: UTF8.self), expected)
    }

    func testSerializeCompact() {
        let value: JSONValue = .object([
            JSONMember("a", .array([.int(1), .double(2.5), .string("x"), .bool(true), .null])),
            JSONMember("b", .object([])),
            JSONMember("c", .array([])),
            JSONMember("a", .double(3)),
            JSONMember("", .string("q\"")),
        ])
        let text = #"{"a":[1,2.5,"x",true,null],"b":{},"c":[],"a":3.0,"":"q\""}"#
        XCTAssertEqual(value.jsonString, text)
        XCTAssertEqual(value.serialized, Array(text.utf8))
        var buffer = Array("prefix".utf8)
        value.serialize(into: &buffer)
        XCTAssertEqual(String(decoding: buffer, as: UTF8.self), "prefix" + text)
        XCTAssertEqual(JSONValue.null.jsonString, "null")
        XCTAssertEqual(JSONValue.int(Int64.min).jsonString, "-9223372036854775808")
        XCTAssertEqual(JSONValue.double(-0.0).jsonString, "0.0")
        XCTAssertEqual(JSONValue.string("\u{2028}").jsonString, #""\u2028""#)
        XCTAssertEqual(JSONValue.array([.array([.array([])])]).jsonString, "[[[]]]")
    }
}
