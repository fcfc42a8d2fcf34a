import HearthJSON
import XCTest

/// Strings: escapes, surrogates, UTF-8 validation and control characters.
extension JSONParserTests {
    func testSimpleStrings() {
        XCTAssertEqual(parseOK("\"\""), .string(""))
        XCTAssertEqual(parseOK("\"abc\""), .string("abc"))
        XCTAssertEqual(parseOK("\"a b/c'd\u{7F}\""), .string("a b/c'd\u{7F}"))
        XCTAssertEqual(parseOK("\"ünïcødé €😀\""), .string("ünïcødé €😀"))
    }

    func testEscapes() {
        XCTAssertEqual(
            scalars(parseOK(#""\"\\\/\b\f\n\r\t""#)),
            Array("\"\\/\u{08}\u{0C}\n\r\t".unicodeScalars))
        XCTAssertEqual(parseOK(#""\u0041\u00e9\u00E9\u20AC\u20ac""#), .string("Aéé€€"))
        XCTAssertEqual(scalars(parseOK(#""\u0000""#)), ["\u{0}"])
        XCTAssertEqual(scalars(parseOK(#""\u001F\u007f\uFFFF""#)), ["\u{1F}", "\u{7F}", "\u{FFFF}"])
        XCTAssertEqual(parseOK(#""abc\ndef""#), .string("abc\ndef"))
        XCTAssertEqual(parseOK(#""\u2028\u2029""#), .string("\u{2028}\u{2029}"))
        XCTAssertEqual(parseOK(#""é\tü""#), .string("é\tü"))
    }

    func testSurrogatePairs() {
        XCTAssertEqual(parseOK(#""\uD83D\uDE00""#), .string("😀"))
        XCTAssertEqual(scalars(parseOK(#""\ud83d\ude00""#)), ["\u{1F600}"])
        XCTAssertEqual(scalars(parseOK(#""\uD800\uDC00""#)), ["\u{10000}"])
        XCTAssertEqual(scalars(parseOK(#""\uDBFF\uDFFF""#)), ["\u{10FFFF}"])
        XCTAssertEqual(parseOK(#""a\uD83D\uDE00b""#), .string("a😀b"))
    }

    func testLoneAndMismatchedSurrogates() {
        assertRejects(#""\uD83D""#, .syntax, at: 1)
        assertRejects(#""\uDE00""#, .syntax, at: 1)
        assertRejects(#""ab\uDE00\uD83D""#, .syntax, at: 3)
        assertRejects(#""\uD83D\u0041""#, .syntax, at: 1)
        assertRejects(#""\uD83D\uD83D""#, .syntax, at: 1)
        assertRejects(#""\uD83Dx""#, .syntax, at: 1)
        assertRejects(#""\uD83D\n""#, .syntax, at: 1)
        assertRejects(#""\uD83D"#, .syntax, at: 1)
        assertRejects(#""\uD83D\uDE0""#, .syntax, at: 12)
    }

    func testBadEscapes() {
        assertRejects(#""\x""#, .syntax, at: 1)
        assertRejects(#""ab\a""#, .syntax, at: 3)
        assertRejects(#""\'""#, .syntax, at: 1)
        assertRejects(#""\U0041""#, .syntax, at: 1)
        assertRejects(#""\u12""#, .syntax, at: 5)
        assertRejects(#""\u12G4""#, .syntax, at: 5)
        assertRejects(#""\u-123""#, .syntax, at: 3)
        assertRejects("\"\\", .syntax, at: 2)
        assertRejects("\"\\u00", .syntax, at: 5)
        assertRejects(#""\"#, .syntax, at: 2)
    }

    func testUnterminatedStrings() {
        assertRejects("\"abc", .syntax, at: 4)
        assertRejects("\"abc\\\"", .syntax, at: 6)
        assertRejects("[\"abcdefghijklmnopqrstuvwxyz", .syntax, at: 28)
        assertRejects("{\"a", .syntax, at: 3)
    }

    func testRawControlCharactersRejected() {
        for c in UInt8(0)..<0x20 {
            assertRejects([0x22, 0x61, c, 0x62, 0x22], .syntax, at: 2)
            // Also after an escape (the slow path) and after a long plain run (the word loop).
            assertRejects([0x22, 0x5C, 0x6E, c, 0x22], .syntax, at: 3)
            assertRejects([0x22] + Array(repeating: 0x61, count: 13) + [c, 0x22], .syntax, at: 14)
        }
        assertRejects("\"a\nb\"", .syntax, at: 2)
        assertRejects("\"\t\"", .syntax, at: 1)
    }

    func testSpecialBytesAtEveryPositionOfTheWordLoop() {
        for n in 0..<40 {
            let prefix = String(repeating: "a", count: n)
            XCTAssertEqual(parseOK("\"\(prefix)\""), .string(prefix))
            XCTAssertEqual(parseOK("\"\(prefix)\\n\(prefix)\""), .string("\(prefix)\n\(prefix)"))
            XCTAssertEqual(parseOK("\"\(prefix)é\(prefix)\""), .string("\(prefix)é\(prefix)"))
            XCTAssertEqual(parseOK("\"\(prefix)\\\"\(prefix)\""), .string("\(prefix)\"\(prefix)"))
            assertRejects(Array("\"\(prefix)".utf8) + [0x01, 0x22], .syntax, at: n + 1)
            assertRejects(Array("\"\(prefix)".utf8) + [0xFF, 0x22], .invalidUTF8, at: n + 1)
            assertRejects(Array("\"\\t\(prefix)".utf8) + [0xC0, 0x80, 0x22], .invalidUTF8, at: n + 3)
            assertRejects("\"\(prefix)", .syntax, at: n + 1)
        }
    }

    func testValidUTF8() {
        let samples: [[UInt8]] = [
            [0xC2, 0x80],  // U+0080
            [0xC3, 0xA9],  // é
            [0xDF, 0xBF],  // U+07FF
            [0xE0, 0xA0, 0x80],  // U+0800
            [0xE2, 0x82, 0xAC],  // €
            [0xED, 0x9F, 0xBF],  // U+D7FF
            [0xEE, 0x80, 0x80],  // U+E000
            [0xEF, 0xBF, 0xBF],  // U+FFFF
            [0xF0, 0x90, 0x80, 0x80],  // U+10000
            [0xF0, 0x9F, 0x98, 0x80],  // 😀
            [0xF4, 0x8F, 0xBF, 0xBF],  // U+10FFFF
        ]
        for sample in samples {
            let value = parseOK([0x22] + sample + [0x22])
            XCTAssertEqual(value, .string(String(decoding: sample, as: UTF8.self)))
            guard case .string(let s)? = value else { continue }
            XCTAssertEqual(Array(s.utf8), sample)
        }
    }

    func testInvalidUTF8() {
        let invalid: [[UInt8]] = [
            [0x80],  // stray continuation
            [0xBF],
            [0xC0, 0x80],  // overlong NUL
            [0xC1, 0xBF],  // overlong
            [0xE0, 0x80, 0x80],  // overlong
            [0xE0, 0x9F, 0xBF],  // overlong U+07FF
            [0xF0, 0x80, 0x80, 0x80],  // overlong
            [0xF0, 0x8F, 0xBF, 0xBF],  // overlong U+FFFF
            [0xED, 0xA0, 0x80],  // U+D800 encoded
            [0xED, 0xAF, 0xBF],  // U+DBFF encoded
            [0xED, 0xB0, 0x80],  // U+DC00 encoded
            [0xED, 0xBF, 0xBF],  // U+DFFF encoded
            [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80],  // CESU-8 😀
            [0xF4, 0x90, 0x80, 0x80],  // U+110000
            [0xF5, 0x80, 0x80, 0x80],
            [0xF7, 0xBF, 0xBF, 0xBF],
            [0xF8, 0x88, 0x80, 0x80, 0x80],
            [0xFE],
            [0xFF],
            [0xC3],  // truncated
            [0xC3, 0x41],  // missing continuation
            [0xE2, 0x82],  // truncated
            [0xE2, 0x41, 0xAC],
            [0xF0, 0x9F, 0x98],  // truncated
            [0xF0, 0x9F, 0x41, 0x80],
        ]
        for sample in invalid {
            // In a plain string, a key, an escaped string, and after valid multi-byte text.
            assertRejects([0x22, 0x61] + sample + [0x22], .invalidUTF8, at: 2)
            assertRejects(Array(#"{"ok":1,""#.utf8) + sample + Array(#"":2}"#.utf8), .invalidUTF8, at: 9)
            assertRejects(Array(#""\n"#.utf8) + sample + [0x22], .invalidUTF8, at: 3)
            assertRejects(Array(#"["é€","😀"#.utf8) + sample + [0x22, 0x5D], .invalidUTF8, at: 14)
        }
        // Truncated at the very end of the input.
        assertRejects([0x22, 0xC3], .invalidUTF8, at: 1)
        assertRejects([0x22, 0xF0, 0x9F, 0x98], .invalidUTF8, at: 1)
        // A known offset inside a document.
        let doc = Array(#"{"name":"ok","bad":"ab"#.utf8) + [0xFF] + Array(#"c"}"#.utf8)
        assertRejects(doc, .invalidUTF8, at: 22)
    }

    func testNonASCIIOutsideStringsIsSyntaxError() {
        assertRejects([0xC3, 0xA9], .syntax, at: 0)
        assertRejects([0x5B, 0xFF, 0x5D], .syntax, at: 1)
        assertRejects([0x31, 0x80], .syntax, at: 1)
    }

    func testCanonicallyEquivalentStringsStayDistinct() {
        let precomposed = parseOK("\"é\"")  // U+00E9
        let decomposed = parseOK("\"e\u{301}\"")  // e + COMBINING ACUTE ACCENT
        XCTAssertEqual(scalars(precomposed), ["\u{E9}"])
        XCTAssertEqual(scalars(decomposed), ["e", "\u{301}"])
        XCTAssertNotEqual(scalars(precomposed), scalars(decomposed))
        XCTAssertEqual(scalars(parseOK(#""\u00e9""#)), ["\u{E9}"])
        XCTAssertEqual(scalars(parseOK(#""e\u0301""#)), ["e", "\u{301}"])
        // Keys too.
        let object = parseOK("{\"é\":1,\"e\u{301}\":2}")?.objectMembers ?? []
        XCTAssertEqual(object.map { Array($0.key.unicodeScalars) }, [["\u{E9}"], ["e", "\u{301}"]])
    }
}
