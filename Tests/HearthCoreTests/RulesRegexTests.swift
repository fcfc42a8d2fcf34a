import HearthCore
import HearthJSON
import XCTest

/// The regex subset of docs/rules.md ("Regular expressions"): what loads, what matches, and that matching stays linear.
final class RulesRegexTests: XCTestCase {
    typealias S = RulesTestSupport

    /// Whether `/pattern/flags` matches `text` (the pattern as written between the slashes).
    func matches(_ pattern: String, _ text: String, flags: String = "", line: UInt = #line) -> Bool {
        let expression = "data.val().matches(/\(pattern)/\(flags))"
        let data = JSONValue.string(text).jsonString
        return S.holds(expression, data: data, line: line)
    }

    func testAcceptedSyntax() {
        for pattern in [
            "a", "^a$", "a|b", "(ab)+", "[abc]", "[a-z0-9_-]", "[^a]", "\\d\\w\\s\\D\\W\\S", "[\\d.]", "a{3}",
            "a{2,}", "a{2,4}", "a*b+c?", "\\.", "\\/", "\\{foo}", "}", "]", "^(19|20)\\d\\d$", "[-a]", "[a-]", "\\^",
            "\\$", "\\n\\t", "((a|b)c)*", "^", "$", "[.]", ".*@example\\.com$", "[\\]]", "[a\\-z]",
        ] {
            XCTAssertNotNil(S.rules(S.readDocument("data.val().matches(/\(pattern)/)")), pattern)
        }
        XCTAssertNotNil(S.rules(S.readDocument("data.val().matches(/a/i)")))
    }

    func testRefusedSyntax() {
        for pattern in [
            "(a|)", "(|a)", "a|", "|a", "()", "a**", "a*?", "a+*", "*a", "+", "?", "(?:a)", "(?=a)", "a\\b",
            "\\1", "a{2,1}", "[z-a]", "[]", "a^", "$a", "(^a$|b)", "(a", "a)", "a{", "{2}", "[a", "\\x41", "\\u0041",
            "\\p{L}", "\\k", "^*", "a$+", "a{1001}",
        ] {
            XCTAssertNotNil(S.refusal(S.readDocument("data.val().matches(/\(pattern)/)")), pattern)
        }
        for flags in ["g", "ig", "m", "u", "y", "s", "ii"] {
            XCTAssertNotNil(S.refusal(S.readDocument("data.val().matches(/a/\(flags))")), flags)
        }
        XCTAssertNotNil(S.refusal(S.readDocument("data.val().matches('a')")))
        XCTAssertNotNil(S.refusal(S.readDocument("/a/ == /a/")))
    }

    func testRegexErrorPointsIntoThePattern() throws {
        let text = #"{"rules": {".read": "data.val().matches(/ab(c|)/)"}}"#
        let error = try XCTUnwrap(S.refusal(text))
        XCTAssertEqual(error.line, 1)
        // The empty alternative is reported where it is: just before `)`.
        let offset = text.distance(from: text.startIndex, to: try XCTUnwrap(text.range(of: "c|)")).lowerBound)
        XCTAssertEqual(error.column, offset + 3)
    }

    func testSearchSemantics() {
        XCTAssertTrue(matches("a", "ba"))
        XCTAssertFalse(matches("^a", "ba"))
        XCTAssertTrue(matches("a$", "ba"))
        XCTAssertFalse(matches("a$", "ab"))
        XCTAssertTrue(matches("^$", ""))
        XCTAssertFalse(matches("^$", "x"))
        XCTAssertTrue(matches("^", "anything"))
        XCTAssertTrue(matches("b*", "xyz"), "matches the empty string somewhere")
        // Alternation binds loosest: /^a|b$/ is (^a)|(b$).
        XCTAssertTrue(matches("^a|b$", "ax"))
        XCTAssertTrue(matches("^a|b$", "xb"))
        XCTAssertFalse(matches("^a|b$", "xa"))
    }

    func testClassesSetsAndQuantifiers() {
        XCTAssertTrue(matches("^\\d{3}-\\d{2}-\\d{4}$", "123-45-6789"))
        XCTAssertFalse(matches("^\\d{3}-\\d{2}-\\d{4}$", "000-00-00000"))
        XCTAssertTrue(matches("^[a-z0-9-]+$", "my-slug-1"))
        XCTAssertFalse(matches("^[a-z0-9-]+$", "My Slug"))
        XCTAssertTrue(matches("^[^abc]+$", "xyz"))
        XCTAssertFalse(matches("^[^abc]+$", "xaz"))
        XCTAssertTrue(matches("^\\w+\\s\\W$", "ab_9 !"))
        XCTAssertTrue(matches("^\\D\\S$", "a!"))
        XCTAssertFalse(matches("^\\D$", "5"))
        XCTAssertTrue(matches("^a{2,3}$", "aaa"))
        XCTAssertFalse(matches("^a{2,3}$", "aaaa"))
        XCTAssertTrue(matches("^a{2,}$", "aaaaaa"))
        XCTAssertFalse(matches("^a{2}$", "a"))
        XCTAssertTrue(matches("^(ab|cd)+e?$", "abcdab"))
        XCTAssertTrue(matches("^.$", "é"))
        XCTAssertTrue(matches("^.$", "😀"), "one character, even outside the BMP")
        XCTAssertTrue(matches("\\{foo}", "{foo}"))
        XCTAssertTrue(matches("^[\\]]$", "]"))
        XCTAssertTrue(matches("^a\\.b$", "a.b"))
        XCTAssertFalse(matches("^a\\.b$", "axb"))
        XCTAssertTrue(matches("^[é-ë]$", "ê"))
    }

    func testCaseInsensitive() {
        XCTAssertTrue(matches("BAR", "bar", flags: "i"))
        XCTAssertFalse(matches("BAR", "bar", flags: ""))
        XCTAssertTrue(matches("^[a-z]+$", "HeLLo", flags: "i"))
        XCTAssertTrue(matches("^[A-Z]+$", "hello", flags: "i"))
        XCTAssertFalse(matches("^[^a-z]+$", "A", flags: "i"))
        XCTAssertTrue(matches("^é$", "É", flags: "i"))
    }

    func testMatchingIsLinear() throws {
        // Exponential for a backtracking engine; linear here.
        let rules = try XCTUnwrap(S.rules(S.readDocument("data.val().matches(/^(a*)*(a|b)*(a+)+c$/)")))
        let data = try node(.string(String(repeating: "a", count: 20_000)))
        let start = ContinuousClock.now
        XCTAssertFalse(rules.checkRead(path: .root, query: nil, auth: nil, root: data, now: S.now).allowed)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
    }
}
