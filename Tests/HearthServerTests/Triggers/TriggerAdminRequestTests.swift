import HearthCore
import HearthJSON
import HearthProtocol
import NIOHTTP1
import XCTest

@testable import HearthServer

/// The triggers' admin requests as the line protocol and the REST endpoints decode them, the
/// inline secret only the admin API accepts, and the answers a `TriggerControl` gives them.
final class TriggerAdminRequestTests: XCTestCase {
    private let decoder = RequestDecoder(limits: .default)
    private let secret = String(repeating: "0123456789abcdef", count: 2)

    private func decode(_ line: String) -> Result<Request, RequestDecoder.Failure> {
        Array(line.utf8).withUnsafeBytes { decoder.decode($0) }
    }

    private func trigger(_ line: String) throws -> TriggerRequest {
        guard case .database(.triggers(let request)) = try decode(line).get().operation else {
            throw XCTSkip("not a trigger request: \(line)")
        }
        return request
    }

    private func failure(_ line: String) -> DatabaseError? {
        guard case .failure(let failure) = decode(line) else { return nil }
        return failure.error
    }

    func testTheLineProtocolOps() throws {
        XCTAssertEqual(try trigger(#"{"op":"triggers","id":1}"#), .list)
        let object: JSONValue = .object([
            JSONMember("name", .string("notify")), JSONMember("path", .string("/messages/{id}")),
        ])
        XCTAssertEqual(
            try trigger(#"{"op":"addTrigger","id":2,"trigger":{"name":"notify","path":"/messages/{id}"}}"#),
            .add(object))
        XCTAssertEqual(try trigger(#"{"op":"removeTrigger","name":"notify"}"#), .remove(name: "notify"))
        XCTAssertEqual(
            try trigger(#"{"op":"deadLetters","name":"notify","limit":5}"#), .deadLetters(name: "notify", limit: 5))
        XCTAssertEqual(
            try trigger(#"{"op":"deadLetters","name":"notify"}"#),
            .deadLetters(name: "notify", limit: TriggerRequest.defaultDeadLetterLimit))
        XCTAssertEqual(try trigger(#"{"op":"replayTrigger","name":"notify"}"#), .replay(name: "notify", ids: nil))
        XCTAssertEqual(
            try trigger(#"{"op":"replayTrigger","name":"notify","ids":["a","b"]}"#),
            .replay(name: "notify", ids: ["a", "b"]))
        XCTAssertEqual(try decode(#"{"op":"triggers","id":7}"#).get().id, .int(7))
    }

    func testBadTriggerRequestsAreRefusedWithTheFieldNamed() {
        let cases: [(String, String)] = [
            (#"{"op":"addTrigger"}"#, #"missing field "trigger""#),
            (#"{"op":"addTrigger","trigger":[1]}"#, #"field "trigger" must be a trigger object"#),
            (#"{"op":"removeTrigger"}"#, #"missing field "name""#),
            (#"{"op":"removeTrigger","name":""}"#, #"missing field "name""#),
            (#"{"op":"removeTrigger","name":3}"#, #"field "name" must be a string"#),
            (#"{"op":"deadLetters","name":"n","limit":0}"#, #"field "limit""#),
            (#"{"op":"deadLetters","name":"n","limit":10001}"#, #"field "limit""#),
            (#"{"op":"deadLetters","name":"n","limit":"5"}"#, #"field "limit""#),
            (#"{"op":"replayTrigger","name":"n","ids":[]}"#, #"field "ids""#),
            (#"{"op":"replayTrigger","name":"n","ids":[1]}"#, #"field "ids""#),
            (#"{"op":"replayTrigger","name":"n","ids":"a"}"#, #"field "ids""#),
        ]
        for (line, message) in cases {
            let error = failure(line)
            XCTAssertEqual(error?.code, .badRequest, line)
            XCTAssertTrue(error?.message.contains(message) ?? false, "\(line): \(error?.message ?? "decoded")")
        }
    }

    private func rest(
        _ method: HTTPMethod, _ path: String, query: String = "", body: String = ""
    ) throws(RESTError) -> TriggerRequest {
        try RESTRequestParser.triggerRequest(
            method, Substring(path), QueryParameters(Substring(query)), body: Array(body.utf8), decoder: decoder)
    }

    func testTheRESTEndpoints() throws {
        XCTAssertEqual(try rest(.GET, "/.well-known/hearth/triggers"), .list)
        XCTAssertEqual(try rest(.GET, "/.well-known/hearth/triggers/"), .list)
        XCTAssertEqual(
            try rest(.POST, "/.well-known/hearth/triggers", body: #"{"name":"n"}"#),
            .add(.object([JSONMember("name", .string("n"))])))
        XCTAssertEqual(try rest(.DELETE, "/.well-known/hearth/triggers/notify"), .remove(name: "notify"))
        XCTAssertEqual(
            try rest(.GET, "/.well-known/hearth/triggers/notify/dead-letters"),
            .deadLetters(name: "notify", limit: TriggerRequest.defaultDeadLetterLimit))
        XCTAssertEqual(
            try rest(.GET, "/.well-known/hearth/triggers/notify/dead-letters", query: "limit=3"),
            .deadLetters(name: "notify", limit: 3))
        XCTAssertEqual(try rest(.POST, "/.well-known/hearth/triggers/notify/replay"), .replay(name: "notify", ids: nil))
        XCTAssertEqual(
            try rest(.POST, "/.well-known/hearth/triggers/notify/replay", body: #"{"ids":["x"]}"#),
            .replay(name: "notify", ids: ["x"]))

        func refused(_ method: HTTPMethod, _ path: String, query: String = "", body: String = "") -> RESTError? {
            do throws(RESTError) {
                _ = try rest(method, path, query: query, body: body)
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(refused(.PUT, "/.well-known/hearth/triggers")?.status, .methodNotAllowed)
        XCTAssertEqual(refused(.GET, "/.well-known/hearth/triggers/notify")?.status, .methodNotAllowed)
        XCTAssertEqual(refused(.POST, "/.well-known/hearth/triggers/notify/dead-letters")?.status, .methodNotAllowed)
        XCTAssertEqual(refused(.GET, "/.well-known/hearth/triggers/notify/replay")?.status, .methodNotAllowed)
        XCTAssertEqual(refused(.GET, "/.well-known/hearth/triggers/notify/other")?.status, .notFound)
        XCTAssertEqual(refused(.POST, "/.well-known/hearth/triggers", body: "[1]")?.status, .badRequest)
        XCTAssertEqual(refused(.POST, "/.well-known/hearth/triggers")?.status, .badRequest)
        XCTAssertEqual(
            refused(.GET, "/.well-known/hearth/triggers/notify/dead-letters", query: "limit=0")?.status, .badRequest)
        XCTAssertEqual(
            refused(.POST, "/.well-known/hearth/triggers/notify/replay", body: #"{"ids":[]}"#)?.status, .badRequest)
    }

    func testTheSecretMayBeInlineOnlyThroughTheAdminAPI() throws {
        let object = try JSONParser.parse(
            Array(#"{"name":"n","path":"/a/{id}","url":"http://127.0.0.1:1/h","secret":"\#(secret)"}"#.utf8))
        let settings = try TriggerSettings.parse(
            object, source: "trigger", baseDirectory: nil, environment: { _ in nil }, allowsInlineSecret: true)
        XCTAssertEqual(settings.secret.bytes, Array(secret.utf8))
        XCTAssertThrowsError(
            try TriggerSettings.parse(object, source: "trigger", baseDirectory: nil, environment: { _ in nil })
        ) { error in
            XCTAssertTrue("\(error)".contains(#"unknown setting "secret""#), "\(error)")
            XCTAssertFalse("\(error)".contains(self.secret), "the secret is never in a message")
        }
        let short = try JSONParser.parse(
            Array(#"{"name":"n","path":"/a","url":"http://127.0.0.1:1/h","secret":"short"}"#.utf8))
        XCTAssertThrowsError(
            try TriggerSettings.parse(
                short, source: "trigger", baseDirectory: nil, environment: { _ in nil }, allowsInlineSecret: true)
        ) { error in
            XCTAssertTrue("\(error)".contains("at least 32 bytes"), "\(error)")
        }
        let both = try JSONParser.parse(
            Array(
                #"{"name":"n","path":"/a","url":"http://127.0.0.1:1/h","secret":"\#(secret)","secretEnv":"X"}"#.utf8))
        XCTAssertThrowsError(
            try TriggerSettings.parse(
                both, source: "trigger", baseDirectory: nil, environment: { _ in self.secret },
                allowsInlineSecret: true)
        ) { error in
            XCTAssertTrue("\(error)".contains("exactly one of secret, secretFile and secretEnv"), "\(error)")
        }
    }

    func testTheAnswersOfATriggerControl() throws {
        let control = RecordingControl()
        let added = try DatabaseRegistry.answer(
            .add(
                try JSONParser.parse(
                    Array(
                        #"{"name":"n","path":"/a/{id}","on":["create"],"url":"http://127.0.0.1:1/h","secret":"\#(secret)"}"#
                            .utf8))),
            control: control)
        XCTAssertEqual(added.first?.key, "trigger")
        XCTAssertEqual(added.first?.value["name"], .string("n"))
        XCTAssertEqual(added.first?.value["on"], .array([.string("create")]))
        XCTAssertFalse(JSONValue.object(added).jsonString.contains(secret), "no answer carries the secret")
        guard case .array(let list)? = try DatabaseRegistry.answer(.list, control: control).first?.value else {
            return XCTFail("no list")
        }
        XCTAssertEqual(list.count, 1)
        XCTAssertEqual(
            try DatabaseRegistry.answer(.replay(name: "n", ids: nil), control: control),
            [JSONMember("replayed", .int(1))])
        let letters = try DatabaseRegistry.answer(.deadLetters(name: "n", limit: 10), control: control)
        XCTAssertEqual(letters.first?.key, "deadLetters")
        XCTAssertEqual(letters.first?.value, .array([control.letter.json]))
        XCTAssertEqual(
            try DatabaseRegistry.answer(.remove(name: "n"), control: control), [JSONMember("removed", .string("n"))])
        XCTAssertThrowsError(try DatabaseRegistry.answer(.remove(name: "n"), control: control)) { error in
            XCTAssertEqual((error as? DatabaseError)?.code, .notFound)
        }
        XCTAssertThrowsError(
            try DatabaseRegistry.answer(.add(.object([JSONMember("name", .string("x"))])), control: control)
        ) { error in
            XCTAssertEqual((error as? DatabaseError)?.code, .badRequest)
            XCTAssertTrue((error as? DatabaseError)?.message.hasPrefix("trigger.path is missing") ?? false, "\(error)")
        }
    }
}

/// A `TriggerControl` holding one list in memory, with one dead letter per trigger.
private final class RecordingControl: TriggerControl, @unchecked Sendable {
    private var triggers: [TriggerSettings] = []
    let letter = DeadLetter(
        id: "default:n:3:/a/x", rev: 3, path: "/a/x", kind: .create, deadAt: 1_700_000_000_000, attempts: 9,
        lastError: "HTTP 503", body: [])

    func statuses() -> [TriggerStatus] {
        triggers.map {
            TriggerStatus(
                name: $0.name, path: $0.pattern.text, kinds: TriggerKind.allCases.filter($0.kinds.contains),
                url: $0.url, source: .api, state: .idle, deliveredRev: 0, headRev: 0, lagSeconds: 0, delivered: 0,
                failed: 0, retried: 0, inFlight: 0, deadLetters: 1, lostRevisions: 0, lastError: nil)
        }
    }

    func add(_ settings: TriggerSettings) throws(DatabaseError) { triggers.append(settings) }

    func remove(_ name: String) throws(DatabaseError) {
        guard let index = triggers.firstIndex(where: { $0.name == name }) else {
            throw DatabaseError(.notFound, "no trigger \(name)")
        }
        triggers.remove(at: index)
    }

    func deadLetters(_ name: String, limit: Int) throws(DatabaseError) -> [DeadLetter] { [letter] }

    func replay(_ name: String, ids: [String]?) throws(DatabaseError) -> Int { 1 }
}
