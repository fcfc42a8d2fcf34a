import HearthJSON
import XCTest

/// Parses `text`'s UTF-8, failing the test on error.
func parseOK(
    _ text: String, limits: JSONLimits = .default, file: StaticString = #filePath, line: UInt = #line
) -> JSONValue? {
    parseOK(Array(text.utf8), limits: limits, file: file, line: line)
}

/// Parses `bytes`, failing the test on error.
func parseOK(
    _ bytes: [UInt8], limits: JSONLimits = .default, file: StaticString = #filePath, line: UInt = #line
) -> JSONValue? {
    do throws(JSONError) {
        return try JSONParser.parse(bytes, limits: limits)
    } catch {
        XCTFail("unexpected error: \(error)", file: file, line: line)
        return nil
    }
}

/// Asserts that parsing `bytes` fails with `kind` at `offset`, and that the message names it.
func assertRejects(
    _ bytes: [UInt8], _ kind: JSONError.Kind, at offset: Int, limits: JSONLimits = .default,
    file: StaticString = #filePath, line: UInt = #line
) {
    do throws(JSONError) {
        let value = try JSONParser.parse(bytes, limits: limits)
        XCTFail("expected \(kind) at \(offset), but parsed \(value)", file: file, line: line)
    } catch {
        XCTAssertEqual(error.kind, kind, "wrong kind: \(error.message)", file: file, line: line)
        XCTAssertEqual(error.offset, offset, "wrong offset: \(error.message)", file: file, line: line)
        XCTAssertTrue(
            error.message.contains("byte \(offset)"), "message lacks the offset: \(error.message)",
            file: file, line: line)
        XCTAssertEqual(error.description, error.message, file: file, line: line)
    }
}

func assertRejects(
    _ text: String, _ kind: JSONError.Kind, at offset: Int, limits: JSONLimits = .default,
    file: StaticString = #filePath, line: UInt = #line
) {
    assertRejects(Array(text.utf8), kind, at: offset, limits: limits, file: file, line: line)
}

/// Asserts `value` is `.double(expected)` with the identical bit pattern.
func assertDouble(
    _ value: JSONValue?, _ expected: Double, file: StaticString = #filePath, line: UInt = #line
) {
    guard case .double(let d)? = value else {
        XCTFail("expected .double(\(expected)), got \(String(describing: value))", file: file, line: line)
        return
    }
    XCTAssertEqual(
        d.bitPattern, expected.bitPattern, "got \(d), expected \(expected)", file: file, line: line)
}

func scalars(_ value: JSONValue?) -> [Unicode.Scalar]? {
    guard case .string(let s)? = value else { return nil }
    return Array(s.unicodeScalars)
}

final class JSONParserTests: XCTestCase {
    /// A workspace reused across documents — failed ones and ones that grow its stacks past the
    /// bound included — parses each exactly as a fresh parser does.
    func testAReusedWorkspaceParsesLikeAFreshParser() throws {
        let big = "[" + (0..<200).map { #"{"k\#($0)":[\#($0),{"x":"y"}]}"# }.joined(separator: ",") + "]"
        let documents = [
            #"{"id":1,"op":"set","path":"/a","value":{"b":[1,2,{"c":null}]}}"#,
            #"{"id":2,"op":"set","path":"/a","value":"#,  // fails: truncated
            #"[1,[2,[3,{"d":"é"}]]]"#,
            big,
            #"{"a":{"b":{"c":"#,  // fails inside nested objects
            #"{"z":true,"z":false}"#,
            #""just a string""#,
        ]
        var workspace = JSONParseWorkspace()
        for _ in 0..<3 {
            for document in documents {
                let bytes = Array(document.utf8)
                let fresh = Result { () throws(JSONError) -> JSONValue in try JSONParser.parse(bytes) }
                let reused = bytes.withUnsafeBytes { raw in
                    Result { () throws(JSONError) -> JSONValue in
                        try JSONParser.parse(raw, reusing: &workspace)
                    }
                }
                switch (fresh, reused) {
                case (.success(let a), .success(let b)): XCTAssertEqual(a, b, document)
                case (.failure(let a), .failure(let b)): XCTAssertEqual(a.message, b.message, document)
                default: XCTFail("\(document): fresh \(fresh), reused \(reused)")
                }
            }
        }
    }

    // MARK: Literals and whitespace

    func testLiterals() {
        XCTAssertEqual(parseOK("true"), .bool(true))
        XCTAssertEqual(parseOK("false"), .bool(false))
        XCTAssertEqual(parseOK("null"), .null)
        XCTAssertEqual(parseOK(" \t\r\n null \n\r\t "), .null)
        XCTAssertEqual(parseOK("[true,false,null]"), .array([.bool(true), .bool(false), .null]))
    }

    func testBadLiterals() {
        assertRejects("tru", .syntax, at: 3)
        assertRejects("trux", .syntax, at: 3)
        assertRejects("nul", .syntax, at: 3)
        assertRejects("fals", .syntax, at: 4)
        assertRejects("falze", .syntax, at: 3)
        assertRejects("True", .syntax, at: 0)
        assertRejects("NULL", .syntax, at: 0)
        assertRejects("nulll", .syntax, at: 4)
        assertRejects("undefined", .syntax, at: 0)
        assertRejects("[tru]", .syntax, at: 4)
    }

    func testEmptyAndWhitespaceOnlyInput() {
        assertRejects("", .syntax, at: 0)
        assertRejects("   ", .syntax, at: 3)
        assertRejects("\n\t\r ", .syntax, at: 4)
    }

    func testOnlyFourWhitespaceCharacters() {
        assertRejects("\u{0C}1", .syntax, at: 0)  // form feed
        assertRejects("\u{0B}1", .syntax, at: 0)  // vertical tab
        assertRejects("\u{A0}1", .syntax, at: 0)  // no-break space (C2 A0)
        assertRejects("\u{FEFF}1", .syntax, at: 0)  // byte order mark
        assertRejects("1\u{0C}", .syntax, at: 1)
        assertRejects("[1,\u{0C}2]", .syntax, at: 3)
    }

    func testTrailingGarbage() {
        assertRejects("1 x", .syntax, at: 2)
        assertRejects("1 2", .syntax, at: 2)
        assertRejects("{} {}", .syntax, at: 3)
        assertRejects("[1]]", .syntax, at: 3)
        assertRejects("\"a\"\"b\"", .syntax, at: 3)
        assertRejects("null,", .syntax, at: 4)
        assertRejects("{\"a\":1}}", .syntax, at: 7)
        assertRejects([UInt8]("true".utf8) + [0], .syntax, at: 4)
        XCTAssertEqual(parseOK("[1] \n"), .array([.int(1)]))
        do throws(JSONError) {
            _ = try JSONParser.parse("  [1]  x")
            XCTFail("accepted trailing garbage")
        } catch {
            XCTAssertEqual(error.offset, 7)
            XCTAssertTrue(error.message.contains("trailing garbage"), error.message)
            XCTAssertTrue(error.message.contains("'x'"), error.message)
        }
    }

    func testScalarDocuments() {
        XCTAssertEqual(parseOK("42"), .int(42))
        XCTAssertEqual(parseOK("\"hi\""), .string("hi"))
        XCTAssertEqual(parseOK(" 1.5 "), .double(1.5))
    }

    // MARK: Numbers

    func testIntegers() {
        XCTAssertEqual(parseOK("0"), .int(0))
        XCTAssertEqual(parseOK("1"), .int(1))
        XCTAssertEqual(parseOK("-1"), .int(-1))
        XCTAssertEqual(parseOK("123456789"), .int(123_456_789))
        XCTAssertEqual(parseOK("-987654321012"), .int(-987_654_321_012))
        XCTAssertEqual(parseOK("9007199254740993"), .int(9_007_199_254_740_993))
        XCTAssertEqual(parseOK("[1,-2,30]"), .array([.int(1), .int(-2), .int(30)]))
    }

    func testInt64Extremes() {
        XCTAssertEqual(parseOK("9223372036854775807"), .int(Int64.max))
        XCTAssertEqual(parseOK("-9223372036854775808"), .int(Int64.min))
        XCTAssertEqual(parseOK("-9223372036854775807"), .int(Int64.min + 1))
        XCTAssertEqual(parseOK("9223372036854775806"), .int(Int64.max - 1))
    }

    func testIntegersBeyondInt64BecomeDoubles() {
        assertDouble(parseOK("9223372036854775808"), 9_223_372_036_854_775_808.0)
        assertDouble(parseOK("-9223372036854775809"), -9_223_372_036_854_775_809.0)
        assertDouble(parseOK("18446744073709551615"), 18_446_744_073_709_551_615.0)
        assertDouble(parseOK("18446744073709551616"), 18_446_744_073_709_551_616.0)
        assertDouble(parseOK("123456789012345678901234567890"), 123_456_789_012_345_678_901_234_567_890.0)
        assertDouble(parseOK("1" + String(repeating: "0", count: 300)), 1e300)
        assertRejects("1" + String(repeating: "0", count: 400), .numberOutOfRange, at: 0)
    }

    func testNegativeZeroBecomesPositiveZero() {
        XCTAssertEqual(parseOK("-0"), .int(0))
        for text in ["-0.0", "-0e5", "-0E-5", "-0.000e+10", "0.0", "0e0", "-1e-400", "1e-400"] {
            let value = parseOK(text)
            assertDouble(value, 0.0)
            if case .double(let d)? = value { XCTAssertEqual(d.sign, .plus, text) }
        }
    }

    func testDoubles() {
        assertDouble(parseOK("1.5"), 1.5)
        assertDouble(parseOK("-1.5"), -1.5)
        assertDouble(parseOK("1.0"), 1.0)
        assertDouble(parseOK("1e2"), 100)
        assertDouble(parseOK("1E2"), 100)
        assertDouble(parseOK("1e+2"), 100)
        assertDouble(parseOK("1e-2"), 0.01)
        assertDouble(parseOK("0.1"), 0.1)
        assertDouble(parseOK("0.30000000000000004"), 0.30000000000000004)
        assertDouble(parseOK("3.141592653589793238462643383279"), Double.pi)
        assertDouble(parseOK("2.718281828459045"), 2.718281828459045)
        assertDouble(parseOK("123.456e-7"), 123.456e-7)
        assertDouble(parseOK("-0.000001"), -0.000001)
        assertDouble(parseOK("1e22"), 1e22)
        assertDouble(parseOK("1e23"), 1e23)
        assertDouble(parseOK("9007199254740993.0"), 9_007_199_254_740_992.0)
        assertDouble(parseOK("1e00000000000000000000000002"), 100)
        assertDouble(parseOK("0e999999999999999999"), 0)
    }

    func testDoubleExtremes() {
        assertDouble(parseOK("5e-324"), Double.leastNonzeroMagnitude)
        assertDouble(parseOK("4.9406564584124654e-324"), Double.leastNonzeroMagnitude)
        assertDouble(parseOK("2.2250738585072014e-308"), Double.leastNormalMagnitude)
        assertDouble(parseOK("2.225073858507201e-308"), Double.leastNormalMagnitude.nextDown)  // subnormal
        assertDouble(parseOK("1.7976931348623157e308"), Double.greatestFiniteMagnitude)
        assertDouble(parseOK("-1.7976931348623157e308"), -Double.greatestFiniteMagnitude)
        assertDouble(parseOK("2e-324"), 0)  // rounds down to zero
    }

    func testNumbersOutOfRange() {
        assertRejects("1e400", .numberOutOfRange, at: 0)
        assertRejects("-1e400", .numberOutOfRange, at: 0)
        assertRejects("1.7976931348623159e308", .numberOutOfRange, at: 0)
        assertRejects("1e999999999999999999999", .numberOutOfRange, at: 0)
        assertRejects("[1, -1e400]", .numberOutOfRange, at: 4)
        assertRejects("{\"a\": 2E+309}", .numberOutOfRange, at: 6)
    }

    func testMalformedNumbers() {
        assertRejects("01", .syntax, at: 1)
        assertRejects("00", .syntax, at: 1)
        assertRejects("-01", .syntax, at: 2)
        assertRejects("00.5", .syntax, at: 1)
        assertRejects("[01]", .syntax, at: 2)
        assertRejects("+1", .syntax, at: 0)
        assertRejects(".5", .syntax, at: 0)
        assertRejects("-.5", .syntax, at: 1)
        assertRejects("1.", .syntax, at: 2)
        assertRejects("1.e5", .syntax, at: 2)
        assertRejects("[1.]", .syntax, at: 3)
        assertRejects("1e", .syntax, at: 2)
        assertRejects("1e+", .syntax, at: 3)
        assertRejects("1e-", .syntax, at: 3)
        assertRejects("1E+a", .syntax, at: 3)
        assertRejects("-", .syntax, at: 1)
        assertRejects("--1", .syntax, at: 1)
        assertRejects("- 1", .syntax, at: 1)
        assertRejects("NaN", .syntax, at: 0)
        assertRejects("nan", .syntax, at: 1)
        assertRejects("Infinity", .syntax, at: 0)
        assertRejects("-Infinity", .syntax, at: 1)
        assertRejects("inf", .syntax, at: 0)
        assertRejects("0x10", .syntax, at: 1)
        assertRejects("1.5.5", .syntax, at: 3)
        assertRejects("1e5.0", .syntax, at: 3)
        assertRejects("1_000", .syntax, at: 1)
        assertRejects("١", .syntax, at: 0)  // Arabic-Indic digit one
    }

    /// The fast (Clinger) path must agree bit for bit with the standard library's correctly
    /// rounded conversion.
    func testRandomNumberTextsMatchStandardLibrary() {
        var rng = SplitMix64(seed: 0x4E55_4D42)
        for _ in 0..<20_000 {
            var text = rng.nextBool() ? "-" : ""
            let intDigits = rng.next(upTo: 22) + 1
            if intDigits == 1 || rng.next(upTo: 4) == 0 {
                text += String(rng.next(upTo: 10))
            } else {
                text += String(rng.next(upTo: 9) + 1)
                for _ in 1..<intDigits { text += String(rng.next(upTo: 10)) }
            }
            var isInteger = true
            if rng.nextBool() {
                isInteger = false
                text += "."
                for _ in 0..<(rng.next(upTo: 22) + 1) { text += String(rng.next(upTo: 10)) }
            }
            if rng.next(upTo: 3) == 0 {
                isInteger = false
                text += rng.nextBool() ? "e" : "E"
                switch rng.next(upTo: 3) {
                case 0: text += "-"
                case 1: text += "+"
                default: break
                }
                text += String(rng.next(upTo: rng.nextBool() ? 30 : 340))
            }
            if isInteger, let exact = Int64(text) {
                XCTAssertEqual(parseOK(text), .int(exact), text)
                continue
            }
            var expected = Double(text)!
            if expected.isInfinite {
                assertRejects(text, .numberOutOfRange, at: 0)
                continue
            }
            if expected == 0 { expected = 0 }
            assertDouble(parseOK(text), expected)
        }
    }

    // MARK: Objects and arrays

    func testArrays() {
        XCTAssertEqual(parseOK("[]"), .array([]))
        XCTAssertEqual(parseOK("[ \n ]"), .array([]))
        XCTAssertEqual(parseOK("[1,\"a\",[],{}]"), .array([.int(1), .string("a"), .array([]), .object([])]))
        XCTAssertEqual(parseOK(" [ 1 , [ 2 , [ 3 ] ] ] "), .array([.int(1), .array([.int(2), .array([.int(3)])])]))
        XCTAssertEqual(parseOK("[[[]]]"), .array([.array([.array([])])]))
    }

    func testMalformedArrays() {
        assertRejects("[", .syntax, at: 1)
        assertRejects("[1", .syntax, at: 2)
        assertRejects("[1,", .syntax, at: 3)
        assertRejects("[1,]", .syntax, at: 3)
        assertRejects("[,1]", .syntax, at: 1)
        assertRejects("[,]", .syntax, at: 1)
        assertRejects("[1 2]", .syntax, at: 3)
        assertRejects("[1}", .syntax, at: 2)
        assertRejects("]", .syntax, at: 0)
        assertRejects("[1,,2]", .syntax, at: 3)
        assertRejects("[[1]", .syntax, at: 4)
    }

    func testObjects() {
        XCTAssertEqual(parseOK("{}"), .object([]))
        XCTAssertEqual(parseOK("{ \t}"), .object([]))
        XCTAssertEqual(
            parseOK("{\"b\":1,\"a\":[true,null],\"c\":{\"d\":\"e\"}}"),
            .object([
                JSONMember("b", .int(1)),
                JSONMember("a", .array([.bool(true), .null])),
                JSONMember("c", .object([JSONMember("d", .string("e"))])),
            ]))
        XCTAssertEqual(
            parseOK(" { \"a\" : 1 , \"b\" : [ ] } "),
            .object([JSONMember("a", .int(1)), JSONMember("b", .array([]))]))
        XCTAssertEqual(parseOK("{\"\":0}"), .object([JSONMember("", .int(0))]))
        XCTAssertEqual(parseOK(#"{"a\nb":1}"#), .object([JSONMember("a\nb", .int(1))]))
    }

    func testMemberOrderAndDuplicatesKept() {
        let value = parseOK(#"{"z":1,"a":2,"z":3,"m":4,"a":5}"#)
        XCTAssertEqual(value?.objectMembers?.map(\.key), ["z", "a", "z", "m", "a"])
        XCTAssertEqual(
            value?.objectMembers?.map(\.value), [.int(1), .int(2), .int(3), .int(4), .int(5)])
        XCTAssertEqual(value?["z"], .int(3), "lookups take the last duplicate, as JSON.parse does")
    }

    func testMalformedObjects() {
        assertRejects("{", .syntax, at: 1)
        assertRejects("{\"a\"}", .syntax, at: 4)
        assertRejects("{\"a\":}", .syntax, at: 5)
        assertRejects("{\"a\":1,}", .syntax, at: 7)
        assertRejects("{,}", .syntax, at: 1)
        assertRejects("{1:2}", .syntax, at: 1)
        assertRejects("{a:1}", .syntax, at: 1)
        assertRejects("{'a':1}", .syntax, at: 1)
        assertRejects("{\"a\":1", .syntax, at: 6)
        assertRejects("{\"a\" 1}", .syntax, at: 5)
        assertRejects("{\"a\":1 \"b\":2}", .syntax, at: 7)
        assertRejects("{\"a\":1]", .syntax, at: 6)
        assertRejects("{\"a\"::1}", .syntax, at: 5)
        assertRejects("{\"a\":1,,\"b\":2}", .syntax, at: 7)
        assertRejects("{null:1}", .syntax, at: 1)
    }

    // MARK: Limits

    func testDepthLimitExactBoundary() {
        for n in [1, 2, 3, 7, 64] {
            let limits = JSONLimits(maxDepth: n)
            XCTAssertNotNil(
                parseOK(String(repeating: "[", count: n) + String(repeating: "]", count: n), limits: limits))
            assertRejects(
                String(repeating: "[", count: n + 1) + String(repeating: "]", count: n + 1),
                .tooDeep, at: n, limits: limits)
            // Objects count too: {"a":{"a":...}} has 5 bytes per level before the next brace.
            let objects = String(repeating: "{\"a\":", count: n) + "1" + String(repeating: "}", count: n)
            XCTAssertNotNil(parseOK(objects, limits: limits))
            let deeper = String(repeating: "{\"a\":", count: n + 1) + "1" + String(repeating: "}", count: n + 1)
            assertRejects(deeper, .tooDeep, at: 5 * n, limits: limits)
            // Mixed, with a scalar at the deepest level (scalars do not count).
            let mixed =
                String(repeating: "[{\"k\":", count: n / 2) + (n % 2 == 1 ? "[0]" : "0")
                + String(repeating: "}]", count: n / 2)
            XCTAssertNotNil(parseOK(mixed, limits: limits))
        }
    }

    func testDefaultDepthLimitIs512() {
        XCTAssertEqual(JSONLimits.default.maxDepth, 512)
        XCTAssertEqual(JSONLimits.default.maxStringBytes, .max)
        XCTAssertNotNil(parseOK(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)))
        assertRejects(String(repeating: "[", count: 513) + String(repeating: "]", count: 513), .tooDeep, at: 512)
    }

    func testDepthZeroAllowsOnlyScalars() {
        let limits = JSONLimits(maxDepth: 0)
        XCTAssertEqual(parseOK("1", limits: limits), .int(1))
        XCTAssertEqual(parseOK("\"s\"", limits: limits), .string("s"))
        assertRejects("[]", .tooDeep, at: 0, limits: limits)
        assertRejects(" {}", .tooDeep, at: 1, limits: limits)
    }

    func testVeryDeepInputIsRejectedWithoutCrashing() {
        let n = 100_000
        assertRejects(String(repeating: "[", count: n), .tooDeep, at: 512)
        assertRejects(String(repeating: "[", count: n) + String(repeating: "]", count: n), .tooDeep, at: 512)
        assertRejects(String(repeating: "{\"a\":", count: n), .tooDeep, at: 512 * 5)
        assertRejects(String(repeating: "[{\"\":", count: n), .tooDeep, at: 256 * 5)
        // The parser itself is iterative: even without a depth limit, 100,000 open containers do
        // not overflow the stack (the error is the missing value at the end of the input).
        assertRejects(String(repeating: "[", count: n), .syntax, at: n, limits: JSONLimits(maxDepth: .max))
    }

    func testDeepDocumentWithRaisedLimit() {
        let n = 3_000
        let text = String(repeating: "[", count: n) + "1" + String(repeating: "]", count: n)
        guard var value = parseOK(text, limits: JSONLimits(maxDepth: n)) else { return }
        XCTAssertEqual(value.serialized, Array(text.utf8))
        var depth = 0
        while case .array(let elements) = value {
            depth += 1
            value = elements[0]
        }
        XCTAssertEqual(depth, n)
        XCTAssertEqual(value, .int(1))
    }

    func testStringLengthLimit() {
        let limits = JSONLimits(maxStringBytes: 3)
        XCTAssertEqual(parseOK("\"abc\"", limits: limits), .string("abc"))
        XCTAssertEqual(parseOK("\"\"", limits: limits), .string(""))
        assertRejects("\"abcd\"", .stringTooLong, at: 0, limits: limits)
        assertRejects("[\"ab\", \"abcd\"]", .stringTooLong, at: 7, limits: limits)
        // Keys are strings too.
        assertRejects("{\"abcd\":1}", .stringTooLong, at: 1, limits: limits)
        XCTAssertNotNil(parseOK("{\"abc\":\"def\"}", limits: limits))
        // The limit applies to the decoded UTF-8, not to the escaped text.
        XCTAssertEqual(parseOK(#""\n\n\n""#, limits: limits), .string("\n\n\n"))
        assertRejects(#""\n\n\n\n""#, .stringTooLong, at: 0, limits: limits)
        XCTAssertEqual(parseOK(#""\u00e9a""#, limits: limits), .string("éa"))
        assertRejects(#""\uD83D\uDE00""#, .stringTooLong, at: 0, limits: limits)  // 4 bytes
        XCTAssertEqual(parseOK("\"€\"", limits: limits), .string("€"))  // 3 bytes
        assertRejects("\"é€\"", .stringTooLong, at: 0, limits: limits)  // 5 bytes
        XCTAssertEqual(parseOK("\"é€\"", limits: JSONLimits(maxStringBytes: 5)), .string("é€"))
        assertRejects("\"x\"", .stringTooLong, at: 0, limits: JSONLimits(maxStringBytes: 0))
    }

    // MARK: Entry points and errors

    func testEntryPoints() throws {
        let text = " {\"a\":[1,2.5,\"x\"]} "
        let expected: JSONValue = .object([JSONMember("a", .array([.int(1), .double(2.5), .string("x")]))])
        XCTAssertEqual(try JSONParser.parse(text), expected)
        XCTAssertEqual(try JSONParser.parse(Array(text.utf8)), expected)
        let padded = Array("xx\(text)yy".utf8)
        XCTAssertEqual(try JSONParser.parse(padded[2..<(padded.count - 2)]), expected)
        try Array(text.utf8).withUnsafeBytes { raw in
            XCTAssertEqual(try JSONParser.parse(raw), expected)
        }
        // An empty buffer without a base address.
        XCTAssertThrowsError(try JSONParser.parse(UnsafeRawBufferPointer(start: nil, count: 0))) { error in
            XCTAssertEqual((error as? JSONError)?.kind, .syntax)
            XCTAssertEqual((error as? JSONError)?.offset, 0)
        }
        // A non-native (substring-derived) String.
        let sub = ("[[" + text + "]]").dropFirst(2).dropLast(2)
        XCTAssertEqual(try JSONParser.parse(String(sub)), expected)
    }

    func testSliceOffsetsAreRelativeToTheSlice() {
        let bytes = Array("[1][1,]".utf8)
        do throws(JSONError) {
            _ = try JSONParser.parse(bytes[3...])
            XCTFail("accepted a trailing comma")
        } catch {
            XCTAssertEqual(error.offset, 3)
            XCTAssertEqual(error.kind, .syntax)
        }
    }

    func testErrorMessages() {
        do throws(JSONError) {
            _ = try JSONParser.parse("[1, 2, x]")
            XCTFail("accepted x")
        } catch {
            XCTAssertEqual(error.kind, .syntax)
            XCTAssertEqual(error.offset, 7)
            XCTAssertTrue(error.message.hasPrefix("unexpected character 'x' at byte 7"), error.message)
            XCTAssertEqual("\(error)", error.message)
        }
        do throws(JSONError) {
            _ = try JSONParser.parse([0x5B, 0x01])
            XCTFail("accepted 0x01")
        } catch {
            XCTAssertTrue(error.message.hasPrefix("unexpected byte 0x01 at byte 1"), error.message)
        }
        do throws(JSONError) {
            _ = try JSONParser.parse("[1")
            XCTFail("accepted truncated input")
        } catch {
            XCTAssertTrue(error.message.hasPrefix("unexpected end of input at byte 2"), error.message)
        }
        let a = JSONError(kind: .tooDeep, offset: 3, message: "m")
        XCTAssertEqual(a, JSONError(kind: .tooDeep, offset: 3, message: "m"))
        XCTAssertNotEqual(a, JSONError(kind: .tooDeep, offset: 4, message: "m"))
    }

    func testLargeDocument() {
        var text = "["
        for i in 0..<10_000 {
            if i > 0 { text += "," }
            text +=
                #"{"id":\#(i),"name":"item \#(i)","score":\#(Double(i) / 8),"tags":["a","b\n"],"ok":\#(i % 2 == 0)}"#
        }
        text += "]"
        guard case .array(let items)? = parseOK(text) else { return XCTFail("not an array") }
        XCTAssertEqual(items.count, 10_000)
        XCTAssertEqual(items[9_999]["id"], .int(9_999))
        XCTAssertEqual(items[9_999]["name"], .string("item 9999"))
        XCTAssertEqual(items[12]["score"], .double(1.5))
        XCTAssertEqual(items[3]["tags"], .array([.string("a"), .string("b\n")]))
        XCTAssertEqual(items[3]["ok"], .bool(false))
    }
}
