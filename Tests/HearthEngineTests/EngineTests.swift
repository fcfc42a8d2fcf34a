import HearthCore
import XCTest

@testable import HearthEngine

/// The engine on its own: requests from connections in, answers and events out, the log behind
/// them. What each test asserts is what a client relies on, whatever transport carried it.
final class EngineTests: XCTestCase {
    func testAnswersComeInOrderAndReadsSeeEarlierWritesOfTheSameRun() async throws {
        let harness = try EngineHarness()
        let alice = harness.session(1)
        try harness.send(
            [
                #"{"op":"set","id":1,"path":"/users/ada","value":{"born":1815}}"#,
                #"{"op":"update","id":2,"path":"/users/ada","values":{"name":"Ada"}}"#,
                #"{"op":"get","id":3,"path":"/users/ada"}"#,
                #"{"op":"remove","id":4,"path":"/users/ada/born"}"#,
                #"{"op":"get","id":5,"path":"/users"}"#,
            ], from: alice)
        let answers = try await harness.take(alice)
        XCTAssertEqual(answers.count, 5)
        XCTAssertTrue(answers[0].hasPrefix(#"{"id":1,"ok":true"#), answers[0])
        XCTAssertTrue(answers[2].contains(#""value":{"born":1815,"name":"Ada"}"#), answers[2])
        XCTAssertTrue(answers[4].contains(#""value":{"ada":{"name":"Ada"}}"#), answers[4])
        try await harness.close()
    }

    func testAnAcknowledgedWriteIsInTheLogWhenTheDirectoryIsOpenedAgain() async throws {
        let harness = try EngineHarness()
        let client = harness.session(1)
        try harness.send([#"{"op":"set","id":1,"path":"/kept","value":"yes"}"#], from: client)
        let answers = try await harness.take(client)
        XCTAssertTrue(answers.first?.hasPrefix(#"{"id":1,"ok":true"#) == true, "\(answers)")
        try await harness.close()

        let reopened = try EngineHarness(directory: harness.directory)
        let reader = reopened.session(2)
        try reopened.send([#"{"op":"get","id":7,"path":"/kept"}"#], from: reader)
        let read = try await reopened.take(reader)
        XCTAssertTrue(read.first?.contains(#""value":"yes""#) == true, "\(read)")
        try await reopened.close()
    }

    func testASubscriberHearsAnotherConnectionsWriteAndTheWriterHearsOnlyItsAnswer() async throws {
        let harness = try EngineHarness()
        let watcher = harness.session(1)
        let writer = harness.session(2)
        try harness.send([#"{"op":"subscribe","id":1,"path":"/room","events":["value"]}"#], from: watcher)
        let subscribed = try await harness.take(watcher)
        XCTAssertTrue(subscribed.first?.contains(#""sub":"#) == true, "\(subscribed)")
        XCTAssertTrue(subscribed.last?.contains(#""value":null"#) == true, "\(subscribed)")

        try harness.send([#"{"op":"set","id":9,"path":"/room/topic","value":"tea"}"#], from: writer)
        let written = try await harness.take(writer)
        XCTAssertEqual(written.count, 1)
        let events = try await harness.take(watcher)
        XCTAssertEqual(events.count, 1, "\(events)")
        XCTAssertTrue(events.first?.contains(#""value":{"topic":"tea"}"#) == true, "\(events)")
        try await harness.close()
    }

    func testRulesRefuseAWriteAndTheDataStaysAsItWas() async throws {
        let rules = #"{"rules":{".read":true,"open":{".write":true},"closed":{".write":false}}}"#
        let harness = try EngineHarness(rules: rules)
        let client = harness.session(1)
        try harness.send(
            [
                #"{"op":"set","id":1,"path":"/open/a","value":1}"#,
                #"{"op":"set","id":2,"path":"/closed/a","value":1}"#,
                #"{"op":"get","id":3,"path":"/"}"#,
            ], from: client)
        let answers = try await harness.take(client)
        XCTAssertEqual(answers.count, 3)
        XCTAssertTrue(answers[0].hasPrefix(#"{"id":1,"ok":true"#), answers[0])
        XCTAssertTrue(answers[1].contains("permission_denied"), answers[1])
        XCTAssertTrue(answers[2].contains(#""value":{"open":{"a":1}}"#), answers[2])
        try await harness.close()
    }

    func testAWriteSentAgainWithItsWriteIDIsAnsweredOnceAndAppliedOnce() async throws {
        let harness = try EngineHarness()
        let client = harness.session(1)
        let push = #"{"op":"push","id":1,"path":"/log","value":"entry","wid":"c1:1"}"#
        try harness.send([push], from: client)
        let first = try await harness.take(client)
        try harness.send([push.replacingOccurrences(of: #""id":1"#, with: #""id":2"#)], from: client)
        let second = try await harness.take(client)
        let key = try XCTUnwrap(first.first?.components(separatedBy: #""key":""#).last?.prefix(20))
        XCTAssertTrue(second.first?.contains(#""key":"\#(key)"#) == true, "the first write's key: \(second)")
        XCTAssertTrue(second.first?.contains(#""duplicate":true"#) == true, "\(second)")
        try harness.send([#"{"op":"get","id":3,"path":"/log"}"#], from: client)
        let log = try await harness.take(client)
        XCTAssertEqual(log.first?.components(separatedBy: "entry").count, 2, "one entry: \(log)")
        try await harness.close()
    }
}
