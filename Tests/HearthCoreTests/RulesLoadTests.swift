import HearthCore
import HearthJSON
import XCTest

/// Loading rules files: comments, the checks of docs/rules.md ("Checks at load"), positions in errors, limits.
final class RulesLoadTests: XCTestCase {
    typealias S = RulesTestSupport

    func testCommentsAreAccepted() throws {
        let text = """
            // The blog's rules.
            {
              /* everything is public to read */
              "rules": {
                ".read": true, // trailing comment
                "posts": { ".write": "auth != null && '//' != '/*'" }
              }
            }
            """
        let rules = try XCTUnwrap(S.rules(text))
        XCTAssertEqual(
            rules.document, json(#"{"rules":{".read":true,"posts":{".write":"auth != null && '//' != '/*'"}}}"#))
        XCTAssertTrue(try S.canSet(rules, "/posts/a", "1", auth: S.alice).allowed)
    }

    func testErrorsNameRulePathLineAndColumn() throws {
        let text = """
            {
              "rules": {
                "users": {
                  "$uid": {
                    ".write": "auth.uid == \\"x\\" && nope"
                  }
                }
              }
            }
            """
        let error = try XCTUnwrap(S.refusal(text))
        XCTAssertEqual(error.rulePath, "/rules/users/$uid/.write")
        XCTAssertEqual(error.line, 5)
        // The column of `nope` in the file: the escaped quotes count as two characters each.
        let fileLine = text.split(separator: "\n")[4]
        let column =
            fileLine.distance(from: fileLine.startIndex, to: try XCTUnwrap(fileLine.range(of: "nope")).lowerBound) + 1
        XCTAssertEqual(error.column, column)
        XCTAssertTrue(error.message.contains("/rules/users/$uid/.write"), error.message)
        XCTAssertTrue(error.message.contains("line 5, column \(column)"), error.message)
        XCTAssertTrue(error.message.contains("nope"), error.message)
    }

    func testErrorsAfterMultiByteCharactersCountScalars() throws {
        let text = "{\"rules\": {\"é\": {\".read\": \"'ü' == 'ü' && x\"}}}"
        let error = try XCTUnwrap(S.refusal(text))
        XCTAssertEqual(error.line, 1)
        let column =
            text.unicodeScalars.distance(
                from: text.unicodeScalars.startIndex, to: try XCTUnwrap(text.range(of: "x\"")).lowerBound) + 1
        XCTAssertEqual(error.column, column)
    }

    func testJSONSyntaxErrorsHaveLineAndColumn() throws {
        let error = try XCTUnwrap(S.refusal("{\n  \"rules\": {\n    \".read\": true,\n  }\n}"))
        XCTAssertEqual(error.line, 4)
        XCTAssertNotNil(error.column)
        XCTAssertNotNil(S.refusal("{\"rules\": {\".read\": \"a\nb\"}}"), "raw newline inside a string")
        XCTAssertNotNil(S.refusal("{\"rules\": {}} /* unterminated"))
    }

    func testDocumentShape() {
        XCTAssertNotNil(S.rules(#"{"rules": {}}"#))
        XCTAssertNotNil(S.rules(#"{"rules": {".indexOn": ["a", ".value"], "x": {".indexOn": "b"}}}"#))
        for bad in [
            #"[]"#, #"{}"#, #"{"rules": true}"#, #"{"rules": {"a": "true"}}"#, #"{"rules": {"a": 1}}"#,
            #"{"rules": {".read": null}}"#, #"{"rules": {".validate": []}}"#, #"{"rules": {".indexOn": [1]}}"#,
            #"{"rules": {".read": true, ".read": false}}"#, #"{"rules": {"$a": {"$a": {}}}}"#,
            #"{"rules": {"$a": {"b": {"$a": {}}}}}"#, #"{"rules": {"a#b": {}}}"#, #"{"rules": {"$": {}}}"#,
            #"{"rules": {}, "rules2": {}}"#,
        ] {
            XCTAssertNotNil(S.refusal(bad), bad)
        }
    }

    func testWildcardScoping() {
        XCTAssertNotNil(S.rules(#"{"rules": {"$a": {"$b": {".read": "$a != $b"}}}}"#))
        // A sibling's wildcard is not in scope.
        XCTAssertNotNil(S.refusal(#"{"rules": {"$a": {}, "x": {".read": "$a == 'x'"}}}"#))
        // A wildcard is not in scope at its own parent.
        XCTAssertNotNil(S.refusal(#"{"rules": {".read": "$a == 'x'", "$a": {}}}"#))
        // The binding is visible at the wildcard itself and below.
        XCTAssertNotNil(S.rules(#"{"rules": {"$a": {".read": "$a == 'x'", "b": {"c": {".write": "$a == 'y'"}}}}}"#))
    }

    func testStaticTyping() {
        let accepted = [
            "auth.x + 1 == 2", "data.val() ? true : false", "auth.token.a.b.c == null", "data.val().length > 1",
            "auth.token['firebase']['x'] == 'y'", "auth.token[$k] == true".replacingOccurrences(of: "$k", with: "'k'"),
            "(auth.uid + '').length > 0", "query.limitToFirst <= 10", "now > 0", "data.child('a').val() > 5",
            "root.child(auth.uid).exists()", "data.val() == null", "data.getPriority() > 1", "'a' < 'b'",
            "data.val() + 1 > 2", "data.exists() ? data.val() == 1 : auth != null", "!(data.val())",
            "auth.token.admin && true", "root['exists']()", "data.child('a/b').child('c').parent().exists()",
            "data.val().matches(/a/i)", "data.hasChildren(['a', auth.uid])", "data.val() === 'x'",
        ]
        for expression in accepted {
            XCTAssertNotNil(S.rules(S.readDocument(expression)), expression)
        }
        let refused = [
            "1 + true == 2", "'a' - 1 == 0", "data.val() > true", "7", "'foo'", "x ? 7 : true", "auth",
            "null > 1", "data > 1", "data == data", "root.child('x') === null", "data.val().foo == 1",
            "data.val()['k'] == 1", "data.child(1).exists()", "data.hasChild(true)", "data.exists(1)",
            "data.val().contains()", "'a'.replace('a') == 'b'", "data.val().matches(/a/, /b/)",
            "[1, 2] == 3", "/a/ == 1", "data.val().length()", "data.exists", "auth.uid.foo()", "query.foo",
            "query.orderByKey.length > 1", "-'a' < 0", "!'a'", "1 && true", "true || 'x'", "data.foo()",
            "root.child", "now()", "data.val().toLowerCase", "typeof data", "this.x", "new Date()",
            "a = 1", "1 & 1", "1 | 1", "1 ^ 1", "~1", "a => 1", "function() {}", "{}", "`x`", "1;",
            "data.hasChildren([])", "data.hasChildren('a')", "data.hasChildren(['a'], ['b'])",
            "auth.token.x.matches('a')", "(true ? root : 'x') == 1", "true ?", "(true", "data.", "data.child('a'",
        ]
        for expression in refused {
            XCTAssertNotNil(S.refusal(S.readDocument(expression)), expression)
        }
    }

    func testNewDataOnlyInWriteAndValidate() {
        XCTAssertNotNil(S.refusal(#"{"rules": {".read": "newData.exists()"}}"#))
        XCTAssertNotNil(S.rules(#"{"rules": {".write": "newData.exists()", ".validate": "newData.exists()"}}"#))
        XCTAssertNotNil(S.rules(#"{"rules": {".write": "query.limitToFirst == null"}}"#))
    }

    func testLimits() {
        let limits = RuleLimits()
        XCTAssertEqual(limits.maxSourceBytes, 256 * 1024)
        XCTAssertEqual(limits.maxExpressionBytes, 16 * 1024)
        XCTAssertEqual(limits.maxExpressionNodes, 2048)
        XCTAssertEqual(limits.maxDepth, 32)
        XCTAssertEqual(limits.maxRegexLength, 256)

        let padding = String(repeating: " ", count: 300 * 1024)
        XCTAssertNotNil(S.refusal("{\"rules\": {}}" + padding))

        let long = String(repeating: "true && ", count: 2100) + "true"
        XCTAssertNotNil(S.refusal(S.readDocument(long)), "more than 16 KiB")
        let many = String(repeating: "true&&", count: 1100) + "true"
        let error = S.refusal(S.readDocument(many))
        XCTAssertTrue(error?.message.contains("2048") ?? false, error?.message ?? "")
        XCTAssertNotNil(S.rules(S.readDocument(String(repeating: "true&&", count: 1000) + "true")))
        XCTAssertNotNil(S.rules(S.readDocument(String(repeating: "!", count: 200) + "true")))
        XCTAssertNotNil(S.refusal(S.readDocument(String(repeating: "!", count: 300) + "true")))
        let sum = "1" + String(repeating: "+1", count: 300) + " > 0"
        XCTAssertNotNil(S.refusal(S.readDocument(sum)), "a left-deep chain of + deeper than 256")
        let nested = String(repeating: "(", count: 500) + "true" + String(repeating: ")", count: 500)
        XCTAssertNotNil(S.refusal(S.readDocument(nested)))

        var deep = #"{".read": true}"#
        for i in 0..<32 { deep = "{\"k\(i)\": \(deep)}" }
        XCTAssertNotNil(S.rules("{\"rules\": \(deep)}"), "depth 32 is the limit")
        XCTAssertNotNil(S.refusal("{\"rules\": {\"k\": \(deep)}}"), "depth 33")

        let regex = String(repeating: "a", count: 256)
        XCTAssertNotNil(S.rules(S.readDocument("data.val().matches(/\(regex)/)")))
        XCTAssertNotNil(S.refusal(S.readDocument("data.val().matches(/\(regex)a/)")))
        XCTAssertNotNil(S.refusal(S.readDocument("data.val().matches(/(a{1000}){1000}/)")), "expands too far")

        let small = RuleLimits(
            maxSourceBytes: 100, maxExpressionBytes: 10, maxExpressionNodes: 3, maxDepth: 1, maxRegexLength: 2)
        XCTAssertThrowsError(try RuleSet(source: #"{"rules": {".read": "1 == 1 && true"}}"#, limits: small))
        XCTAssertThrowsError(try RuleSet(source: #"{"rules": {"a": {"b": {}}}}"#, limits: small))
        XCTAssertNoThrow(try RuleSet(source: #"{"rules": {"a": {".read": "true"}}}"#, limits: small))
    }

    func testIndexRulesComeFromTheSameDocument() throws {
        let rules = try XCTUnwrap(S.rules(#"{"rules": {"d": {".indexOn": ["height"], ".read": true}}}"#))
        XCTAssertTrue(rules.indexRules.isDeclared(.child(try path("height")), at: try path("/d")))
        XCTAssertNotNil(S.refusal(#"{"rules": {"d": {".indexOn": ["a/.b"]}}}"#))
    }

    func testDocumentInitializer() throws {
        let document = json(#"{"rules": {".read": "auth != null"}}"#)
        let rules = try RuleSet(document: document)
        XCTAssertEqual(rules.document, document)
        XCTAssertThrowsError(try RuleSet(document: json(#"{"rules": {".read": "auth"}}"#)))
    }
}
