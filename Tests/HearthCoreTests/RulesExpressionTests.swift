import HearthCore
import HearthJSON
import XCTest

/// The expression language at run time (docs/rules.md, "The language in detail"): values, operators, errors, members,
/// snapshot and string methods.
final class RulesExpressionTests: XCTestCase {
    typealias S = RulesTestSupport

    func assertHolds(
        _ expression: String, data: String = "null", auth: AuthContext? = nil, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertTrue(
            S.holds(expression, data: data, auth: auth, file: file, line: line), expression, file: file, line: line)
    }

    func assertFails(
        _ expression: String, data: String = "null", auth: AuthContext? = nil, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertFalse(
            S.holds(expression, data: data, auth: auth, file: file, line: line), expression, file: file, line: line)
    }

    func testEqualityAcrossTypes() {
        assertHolds("1 == 1.0 && 2 === 2 && 'a' == 'a' && null == null && true == true")
        assertFails("1 == '1'")
        assertFails("null == false")
        assertFails("0 == false")
        assertFails("'' == null")
        assertHolds("1 != '1' && null !== false && 0 != ''")
        assertHolds("auth == null")
        assertFails("auth == null", auth: S.alice)
        assertHolds("auth != null && auth != 'alice' && auth != 1", auth: S.alice)
        // Two maps compared: an error, so neither == nor != is true (docs/rules.md, "Evaluation errors").
        assertFails("auth.token == auth.token", auth: S.alice)
        assertFails("auth.token != auth.token", auth: S.alice)
        assertFails("(auth.token == auth.token) || true", auth: S.alice)
        // NaN is unequal to itself.
        assertHolds("(0/0) != (0/0)")
        // Strings compare by code units, not canonical equivalence.
        assertFails("'\\u00e9' == 'e\\u0301'")
    }

    func testNumberToString() {
        let cases: [(String, String)] = [
            ("123", "123"), ("-0.5", "-0.5"), ("1.1", "1.1"), ("0.1 + 0.2", "0.30000000000000004"),
            ("100", "100"), ("1e21", "1e+21"), ("1e20", "100000000000000000000"),
            ("123456789012345680000", "123456789012345680000"),
            ("0.000001", "0.000001"), ("0.0000001", "1e-7"), ("1.5e-10", "1.5e-10"), ("2/3", "0.6666666666666666"),
            ("-0", "0"), ("1e300 * 1e10", "Infinity"), ("-1e300 * 1e10", "-Infinity"), ("1/0", "NaN"),
            ("5 % 0", "NaN"), ("-7 % 3", "-1"), ("1e16", "10000000000000000"), ("4.35", "4.35"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"), ("5e-324", "5e-324"), ("12345.678", "12345.678"),
        ]
        for (expression, text) in cases {
            assertHolds("(\(expression)) + '' == '\(text)'")
            assertHolds("'x' + (\(expression)) == 'x\(text)'")
        }
        assertHolds("'a' + 1 + 2 == 'a12' && 1 + 2 + 'a' == '3a'")
        assertHolds("data.val() + 1 == 'a1'", data: #""a""#)
        assertHolds("data.val() + '' == '5'", data: "5")
        assertHolds("data.val() + '' == '2.5'", data: "2.5")
    }

    func testArithmeticAndErrors() {
        assertHolds("7 - 2 * 3 == 1 && 7 / 2 == 3.5 && 7 % 4 == 3 && -(2) == -2")
        assertHolds("(1/0 + '') == 'NaN' && !((1/0) > 2) && !((1/0) < 2)")
        // Arithmetic on non-numbers is an error, which makes the whole rule false.
        assertFails("data.val() - 1 == 0 || true", data: #""a""#)
        assertFails("data.val() + 1 == 0 || true", data: "true")
        assertFails("data.val() + 1 == 0 || true")
        assertFails("auth.token + 'x' == 'x' || true", auth: S.alice)
        assertFails("-data.val() < 0 || true", data: #""x""#)
        // Ordering of anything but two numbers or two strings is an error.
        assertFails("data.val() < 'a' || true", data: "1")
        assertFails("data.val() > 1 || true")
        assertFails("auth.uid.length > 0 || true")
        assertHolds("'B' < 'a' && 'a' < 'b' && 'ab' > 'a' && '\\uffff' < '\\ud83d\\ude00' == false")
    }

    func testShortCircuitAndLogic() {
        assertHolds("false && auth.x.length > 0 || true")
        assertHolds("true || auth.x.length > 0")
        assertHolds("true ? true : auth.x.length > 0")
        assertHolds("false ? auth.x.length > 0 : true")
        assertFails("(auth.x.length > 0 ? true : true)")
        // Non-boolean operands are errors at run time (docs/rules.md, "Values and types").
        assertFails("data.val() && true", data: "1")
        assertFails("!data.val()", data: #""x""#)
        assertFails("data.val() || true", data: "1")
        assertHolds("auth.token.admin && true", auth: S.alice)
        assertFails("auth.token.n || true", auth: S.alice)
        // A rule whose value is not a boolean is false.
        assertFails("data.val()", data: "1")
        assertHolds("data.val()", data: "true")
        assertHolds("true || false && false")
    }

    func testMembers() {
        assertHolds("auth.uid == 'alice' && auth.provider == 'custom' && auth.token.sub == 'alice'", auth: S.alice)
        assertHolds("auth.token.nested.k == 'v' && auth.token['nested']['k'] == 'v'", auth: S.alice)
        assertHolds("auth.token.missing == null && auth.token.missing.deeper == null", auth: S.alice)
        assertHolds("auth.uid == null && auth.token.a.b == null")
        assertHolds("auth.token.n == 3 && auth.token['n'] === 3", auth: S.alice)
        assertHolds("'abc'.length == 3 && '\\ud83d\\ude00'.length == 2 && ''.length == 0")
        assertFails("auth.token.n.length == 1 || true", auth: S.alice)
        assertFails("auth.uid.length > 0 || true")
    }

    func testSnapshotMethods() {
        let data = #"{"a": {"b": 1, "c": {".value": "x", ".priority": 5}}, "s": "str", "t": true, "n": 2.5}"#
        assertHolds("root.child('a/b').val() == 1 && root.child('a').child('b').val() == 1", data: data)
        assertHolds("root.child('a//b/').val() == 1 && root.child('').child('a').exists()", data: data)
        assertHolds("root.child('a/c').getPriority() == 5 && root.child('a').getPriority() == null", data: data)
        assertHolds(
            "root.child('a/b').parent().hasChild('c') && root.child('x/y/z').parent().parent().parent().exists()",
            data: data)
        assertFails("root.parent().exists() || true", data: data)
        assertHolds(
            "root.child('a').hasChildren() && !root.child('s').hasChildren() && !root.child('q').hasChildren()",
            data: data)
        assertHolds("root.child('a').hasChildren(['b', 'c']) && !root.child('a').hasChildren(['b', 'd'])", data: data)
        assertHolds(
            "root.child('s').isString() && root.child('t').isBoolean() && root.child('n').isNumber()", data: data)
        assertHolds("!root.child('a').isString() && !root.child('q').isNumber()", data: data)
        assertHolds("root.hasChild('a/c') && !root.hasChild('a/c/d') && !root.hasChild('a.b')", data: data)
        // val() of a node with children: the opaque object value (docs/rules.md, "Methods").
        assertHolds("root.child('a').val() != null && !(root.child('a').val() == null)", data: data)
        assertFails("root.child('a').val() == root.child('a').val()", data: data)
        assertFails("root.child('a').val().length > 0 || true", data: data)
        assertHolds("root.child('missing').val() == null && !root.child('missing').exists()", data: data)
        // Computed child paths; a non-string argument is an error.
        assertHolds("root.child('a/' + 'b').val() == 1", data: data)
        assertFails("root.child(auth.uid).exists() || true", data: data)
        assertFails("root.hasChildren([auth.uid]) || true", data: data)
        assertHolds("root['exists']()", data: data)
    }

    func testStringMethods() {
        assertHolds("'banana'.replace('a', 'o') == 'bonono'")
        assertHolds("'ab'.replace('', '-') == '-a-b-'")
        assertHolds("'aaa'.replace('aa', 'b') == 'ba'")
        assertHolds("'abc'.contains('bc') && 'abc'.beginsWith('ab') && 'abc'.endsWith('bc')")
        assertHolds("'abc'.contains('') && !'abc'.contains('abcd') && !'abc'.endsWith('abcd')")
        assertHolds("'MiXeD'.toLowerCase() == 'mixed' && 'MiXeD'.toUpperCase() == 'MIXED'")
        assertHolds("'ÉCOLE'.toLowerCase() == 'école'")
        let long = String(repeating: "ab", count: 40)
        assertHolds("'\(long)c'.contains('\(String(repeating: "ab", count: 20))c')")
        assertFails("'\(long)'.contains('\(String(repeating: "ab", count: 20))c')")
        assertFails("'a'.contains(auth.uid) || true")
        assertFails("data.val().contains('a') || true", data: "1")
    }

    func testWildcardsAreStrings() throws {
        let rules = try XCTUnwrap(S.rules(#"{"rules": {"items": {"$id": {".read": "$id == '123' && $id != 123"}}}}"#))
        XCTAssertTrue(
            rules.checkRead(path: try path("/items/123"), query: nil, auth: nil, root: .empty, now: S.now).allowed)
    }

    func testQueryObject() {
        assertHolds("!query.orderByKey && !query.orderByValue && !query.orderByPriority && query.orderByChild == null")
        assertHolds("query.startAt == null && query.endAt == null && query.equalTo == null")
        assertHolds("query.limitToFirst == null && query.limitToLast == null")
        XCTAssertTrue(
            S.holds(
                "query.orderByChild == 'a/b' && query.startAt == 3 && query.endAt == 'z'",
                query: #"{"orderBy": "a/b", "startAfter": 3, "endBefore": "z"}"#))
        XCTAssertTrue(
            S.holds("query.equalTo == true && query.startAt == null", query: #"{"orderBy": "$value", "equalTo": true}"#)
        )
        XCTAssertTrue(
            S.holds(
                "query.orderByPriority && query.limitToLast == 2", query: #"{"orderBy": "$priority", "limitToLast": 2}"#
            ))
        XCTAssertFalse(S.holds("query.limitToFirst <= 100", query: #"{"orderBy": "$key"}"#))
    }

    func testNow() throws {
        let rules = try XCTUnwrap(S.rules(S.readDocument("now == 1700000000000")))
        XCTAssertTrue(rules.checkRead(path: .root, query: nil, auth: nil, root: .empty, now: 1_700_000_000_000).allowed)
        XCTAssertFalse(rules.checkRead(path: .root, query: nil, auth: nil, root: .empty, now: 1).allowed)
    }
}
