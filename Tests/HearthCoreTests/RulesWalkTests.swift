import HearthCore
import HearthJSON
import XCTest

/// Which rules run for which operation (docs/rules.md, "The rule chain", "Checks by operation")
/// and the verdicts' explanations.
final class RulesWalkTests: XCTestCase {
    typealias S = RulesTestSupport

    func testLiteralBeatsWildcardAndChainsEnd() throws {
        let rules = try XCTUnwrap(
            S.rules(#"{"rules": {"a": {"title": {".read": false}, "$other": {".read": "$other != 'title'"}}}}"#))
        XCTAssertFalse(
            rules.checkRead(path: try path("/a/title"), query: nil, auth: nil, root: .empty, now: S.now).allowed)
        XCTAssertTrue(
            rules.checkRead(path: try path("/a/x/deeper"), query: nil, auth: nil, root: .empty, now: S.now).allowed)
        XCTAssertFalse(rules.checkRead(path: try path("/b/x"), query: nil, auth: nil, root: .empty, now: S.now).allowed)
        XCTAssertFalse(rules.checkRead(path: try path("/a"), query: nil, auth: nil, root: .empty, now: S.now).allowed)
    }

    func testAnErrorAtOneLevelDoesNotStopDeeperRules() throws {
        let rules = try XCTUnwrap(S.rules(#"{"rules": {".read": "auth.uid.length > 0", "a": {".read": true}}}"#))
        let verdict = rules.checkRead(path: try path("/a"), query: nil, auth: nil, root: .empty, now: S.now)
        XCTAssertTrue(verdict.allowed)
        XCTAssertEqual(verdict.decidingRule, DecidingRule(path: "/a/.read", expression: "true"))
    }

    func testVerdictsExplain() throws {
        let rules = try XCTUnwrap(
            S.rules(
                #"{"rules": {"u": {"$uid": {".write": "auth.uid == $uid", "age": {".validate": "newData.isNumber()"}}}}}"#
            ))
        let allowed = try S.canSet(rules, "/u/alice", #"{"age": 3}"#, auth: S.alice)
        XCTAssertTrue(allowed.allowed)
        XCTAssertEqual(allowed.decidingRule, DecidingRule(path: "/u/$uid/.write", expression: "auth.uid == $uid"))
        let invalid = try S.canSet(rules, "/u/alice", #"{"age": "x"}"#, auth: S.alice)
        XCTAssertFalse(invalid.allowed)
        XCTAssertEqual(
            invalid.decidingRule, DecidingRule(path: "/u/$uid/age/.validate", expression: "newData.isNumber()"))
        XCTAssertTrue(invalid.explanation.contains("/u/alice/age"), invalid.explanation)
        let denied = try S.canSet(rules, "/u/bob", #"{"age": 3}"#, auth: S.alice)
        XCTAssertFalse(denied.allowed)
        XCTAssertNil(denied.decidingRule)
        XCTAssertEqual(denied.explanation, "no .write rule granted at /u/bob")
        let read = rules.checkRead(path: try path("/u"), query: nil, auth: S.alice, root: .empty, now: S.now)
        XCTAssertEqual(read.explanation, "no .read rule granted at /u")
    }

    func testValidationWalksTheWrittenSubtreeOnly() throws {
        let rules = try XCTUnwrap(
            S.rules(
                #"""
                {"rules": {".write": true,
                  "items": {"$id": {".validate": "newData.hasChildren(['n'])", "n": {".validate": "newData.isNumber()"},
                    "tags": {"$t": {".validate": "newData.val() == true"}}}}}}
                """#))
        // An invalid sibling that is not written is not re-validated.
        let data = #"{"items": {"bad": {"x": 1}, "good": {"n": 1, "m": 2}}}"#
        XCTAssertTrue(try S.canSet(rules, "/items/good/n", "2", data: data).allowed)
        XCTAssertTrue(
            try S.canSet(rules, "/items/new", #"{"n": 1, "tags": {"a": true, "b": true}}"#, data: data).allowed)
        XCTAssertFalse(try S.canSet(rules, "/items/new", #"{"n": 1, "tags": {"a": true, "b": 1}}"#, data: data).allowed)
        XCTAssertFalse(try S.canSet(rules, "/items/new", #"{"n": "1"}"#, data: data).allowed)
        // Writing below an invalid item re-validates it against the merged data.
        XCTAssertFalse(try S.canSet(rules, "/items/bad/y", "1", data: data).allowed)
        XCTAssertTrue(try S.canSet(rules, "/items/bad/n", "1", data: data).allowed)
        // Deleting skips the deleted nodes' own rules, but surviving ancestors are validated.
        XCTAssertTrue(try S.canSet(rules, "/items/good", "null", data: data).allowed)
        XCTAssertFalse(try S.canSet(rules, "/items/good/n", "null", data: data).allowed)
        XCTAssertTrue(try S.canSet(rules, "/items/good/n", "null", data: #"{"items": {"good": {"n": 1}}}"#).allowed)
        // A set of the whole tree validates everything written.
        XCTAssertFalse(try S.canSet(rules, "/", data, data: data).allowed)
    }

    func testUpdateIsCheckedOnMergedData() throws {
        let rules = try XCTUnwrap(
            S.rules(
                #"""
                {"rules": {"p": {".write": true, ".validate": "newData.child('a').val() + newData.child('b').val() == 10",
                  "a": {".validate": "newData.parent().child('b').exists()"}, "c": {".write": false}}}}
                """#))
        XCTAssertTrue(try S.canUpdate(rules, "/p", #"{"a": 4, "b": 6}"#).allowed)
        XCTAssertFalse(try S.canUpdate(rules, "/p", #"{"a": 4, "b": 5}"#).allowed)
        XCTAssertFalse(try S.canUpdate(rules, "/p", #"{"a": 10}"#).allowed, "a's sibling b missing")
        XCTAssertTrue(try S.canUpdate(rules, "/p", #"{"a": 3}"#, data: #"{"p": {"a": 1, "b": 7}}"#).allowed)
        // All-or-nothing: one denied target denies the update.
        let verdict = try S.canUpdate(rules, "/p", #"{"a": 4, "b": 6, "c/d": 1}"#)
        XCTAssertTrue(verdict.allowed, "the .write at /p grants c too: deeper .write rules are not consulted")
        let strict = try XCTUnwrap(S.rules(#"{"rules": {"a": {".write": true}, "b": {".write": false}}}"#))
        XCTAssertFalse(try S.canUpdate(strict, "/", #"{"a/x": 1, "b/y": 2}"#).allowed)
        XCTAssertTrue(try S.canUpdate(strict, "/", #"{"a/x": 1, "a/y": 2}"#).allowed)
        XCTAssertTrue(try S.canUpdate(strict, "/", #"{}"#).allowed, "an empty update evaluates nothing")
    }

    func testRootWriteSeesTheNewRoot() throws {
        let rules = try XCTUnwrap(
            S.rules(#"{"rules": {".write": "newData.child('item').val() == 1 && !data.exists()"}}"#))
        XCTAssertTrue(try S.canSet(rules, "/item", "1").allowed)
        XCTAssertFalse(try S.canSet(rules, "/item", "2").allowed)
    }

    func testWriteIsEvaluatedForDeletesAndMissingData() throws {
        let rules = try XCTUnwrap(S.rules(#"{"rules": {"a": {".write": "!newData.exists() && data.exists()"}}}"#))
        XCTAssertTrue(try S.canSet(rules, "/a", "null", data: #"{"a": 1}"#).allowed)
        XCTAssertFalse(try S.canSet(rules, "/a", "null").allowed)
    }

    func testValidateOfTheRootAndOfATargetWithPriority() throws {
        let rules = try XCTUnwrap(
            S.rules(
                #"{"rules": {".write": true, ".validate": "newData.hasChildren()", "p": {".validate": "newData.getPriority() == 1"}}}"#
            ))
        XCTAssertTrue(try S.canSet(rules, "/p", #"{".value": "x", ".priority": 1}"#).allowed)
        XCTAssertFalse(try S.canSet(rules, "/p", #""x""#).allowed)
        XCTAssertTrue(try S.canSet(rules, "/p", "null", data: #"{"p": "x", "q": 1}"#).allowed)
        XCTAssertTrue(
            try S.canSet(rules, "/", "null", data: #"{"p": "x"}"#).allowed, "the root deleted: nothing to validate")
    }

    func testReadDependsOnData() throws {
        let rules = try XCTUnwrap(
            S.rules(
                #"""
                {"rules": {
                  "open": {".read": true, "x": {".read": "data.exists()"}},
                  "chats": {"$c": {".read": "root.child('members/' + $c + '/' + auth.uid).exists()"}},
                  "mine": {"$uid": {".read": "auth.uid == $uid"}}}}
                """#))
        XCTAssertFalse(rules.readDependsOnData(at: try path("/open/x")))
        XCTAssertTrue(rules.readDependsOnData(at: try path("/chats/c1")))
        XCTAssertTrue(rules.readDependsOnData(at: try path("/chats/c1/m")))
        XCTAssertFalse(rules.readDependsOnData(at: try path("/chats")))
        XCTAssertFalse(rules.readDependsOnData(at: try path("/mine/alice")))
        XCTAssertFalse(rules.readDependsOnData(at: try path("/elsewhere")))
    }

    func testNoTargetsIsAllowed() throws {
        let rules = try XCTUnwrap(S.rules(#"{"rules": {}}"#))
        XCTAssertTrue(rules.checkWrite(targets: [], before: .empty, after: .empty, auth: nil, now: S.now).allowed)
        XCTAssertFalse(try S.canSet(rules, "/a", "1").allowed)
    }
}
