import HearthCore
import HearthJSON
import XCTest

@testable import HearthProtocol

/// A request line is read member by member, without a JSON tree for its envelope. It must decode
/// exactly as the request object does when parsed whole (what the HTTP API hands the decoder):
/// the same operation, or the same error with the same id.
final class RequestDecoderTests: XCTestCase {
    let decoder = RequestDecoder(limits: Limits(maxKeyBytes: 16, maxDepth: 4, maxStringBytes: 64))

    /// The decoded line, written out in full (requests hold no identity of their own).
    func described(_ decoded: RequestDecoder.Decoded) -> String {
        var text = ""
        switch decoded {
        case .success(let request):
            dump(request.id, to: &text)
            dump(request.operation, to: &text)
            dump(request.writeID, to: &text)
        case .failure(let failure):
            text = "\(failure.id) \(failure.error.code) \(failure.error.message)"
        }
        return text
    }

    /// The line parsed whole, then decoded from its object.
    func reference(_ line: [UInt8]) -> RequestDecoder.Decoded {
        let json: JSONValue
        do {
            json = try JSONParser.parse(line, limits: decoder.jsonLimits)
        } catch {
            let code: DatabaseError.Code = error.kind == .tooDeep ? .tooDeep : .badRequest
            return .failure(.init(id: .null, error: DatabaseError(code, "malformed JSON: \(error.message)")))
        }
        guard case .object = json else {
            return .failure(.init(id: .null, error: DatabaseError(.badRequest, "a request must be a JSON object")))
        }
        return decoder.request(from: json)
    }

    func testEveryOpAndItsMutationsDecodeAsTheWholeObjectDoes() {
        let lines = [
            #"{"id":1,"op":"set","path":"/a/b","value":{"x":[1,2],"y":"z"},"wid":"c1:7"}"#,
            #"{"id":"s","op":"set","path":"/a","value":3,"priority":1.5}"#,
            #"{"op":"set","path":"/a/.priority","value":"p"}"#,
            #"{"id":2,"op":"remove","path":"/a"}"#,
            #"{"id":3,"op":"setPriority","path":"/a","priority":null}"#,
            #"{"id":4,"op":"update","path":"/a","values":{"b/c":1,"d":{".sv":"timestamp"}}}"#,
            #"{"id":5,"op":"push","path":"/list","value":{"n":1}}"#,
            #"{"id":6,"op":"transaction","path":"/n","value":2,"expect":1}"#,
            #"{"id":7,"op":"transaction","path":"/n","value":2,"expectHash":"abc"}"#,
            #"{"id":8,"op":"onDisconnect","action":"update","path":"/p","values":{"on":false}}"#,
            #"{"id":9,"op":"get","path":"/a","query":{"orderBy":"$key","limitToFirst":2},"shallow":true}"#,
            #"{"id":10,"op":"get","path":"/","hash":true,"format":"export"}"#,
            #"{"id":11,"op":"subscribe","path":"/a","events":["child_added"],"cache":true,"since":4}"#,
            #"{"id":12,"op":"unsubscribe","sub":3}"#,
            #"{"id":13,"op":"auth","token":"t"}"#,
            #"{"id":14,"op":"simulate","as":{"uid":"u"},"request":{"op":"get","path":"/a"}}"#,
            #"{"id":15,"op":"replicaAck","rev":9}"#,
            #"{"id":16,"op":"ping","unknown":[1,{"x":2}]}"#,
            #"{"id":17,"op":"set","op":"remove","path":"/a","path":"/b"}"#,
            #"{"id":18,"op":"set","p\u0061th":"/a","value":true}"#,
            #"{"id":19,"op":"nope"}"#,
            #"{"id":21,"op":"addTrigger","trigger":{"name":"n","path":"/m/{id}"}}"#,
            #"{"id":22,"op":"deadLetters","name":"n","limit":5}"#,
            #"{"id":23,"op":"replayTrigger","name":"n","ids":["a"]}"#,
            #"  {"id":20,"op":"set","path":"/a","value":[[[[[1]]]]]} "#,
            #"[1,2]"#,
        ]
        for line in lines {
            let bytes = Array(line.utf8)
            var variants = (0...bytes.count).map { Array(bytes[..<$0]) }
            for i in bytes.indices {
                for replacement in [UInt8(ascii: "}"), UInt8(ascii: "\""), UInt8(ascii: "1"), 0x80] {
                    var changed = bytes
                    changed[i] = replacement
                    variants.append(changed)
                }
            }
            var workspace = JSONParseWorkspace()
            for variant in variants {
                let decoded = variant.withUnsafeBytes { decoder.decode($0, reusing: &workspace) }
                XCTAssertEqual(
                    described(decoded), described(reference(variant)), String(decoding: variant, as: UTF8.self))
            }
        }
    }

    /// A connection's last path (`PathMemo`) is handed back for the same text: every request must
    /// still decode exactly as it does without it, whatever came before on the connection.
    func testAConnectionsLastPathChangesNoDecodedRequest() {
        let lines = [
            #"{"op":"get","path":"/.info/connected"}"#, #"{"op":"set","path":"/.info/connected","value":1}"#,
            #"{"op":"set","path":"/a/.priority","value":"p"}"#, #"{"op":"get","path":"/a/.priority"}"#,
            #"{"op":"setPriority","path":"/a/.priority","priority":1}"#,
            #"{"op":"get","path":"/a/b"}"#, #"{"op":"set","path":"/a/b","value":1}"#,
            #"{"op":"push","path":"/a/b","value":1}"#, #"{"op":"set","path":"a/b/","value":2}"#,
            #"{"op":"set","path":"/a//b","value":3}"#, #"{"op":"remove","path":"/a/b/c/d/e"}"#,
            #"{"op":"get","path":"/a/b/c/d/e"}"#, #"{"op":"get","path":"/seventeen-bytes-k"}"#,
            #"{"op":"get","path":"/a/b$"}"#, #"{"op":"get","path":"/"}"#, #"{"op":"set","path":"/","value":{}}"#,
            #"{"op":"update","path":"/a/b","values":{"c":1}}"#,
            #"{"op":"get","path":"/a/b","query":{"orderBy":"$key"}}"#,
        ]
        var generator = SystemRandomNumberGenerator()
        for copies in [false, true] {
            let memo = PathMemo(copies: copies)
            var workspace = JSONParseWorkspace()
            for _ in 0..<2_000 {
                let line = Array(lines[Int.random(in: 0..<lines.count, using: &generator)].utf8)
                let remembered = line.withUnsafeBytes { decoder.decode($0, reusing: &workspace, paths: memo) }
                let fresh = line.withUnsafeBytes { decoder.decode($0) }
                XCTAssertEqual(described(remembered), described(fresh), String(decoding: line, as: UTF8.self))
            }
        }
    }

    /// A memo that copies hands each request a path of its own (no array both threads count
    /// references on); one that shares hands the same array again.
    func testACopyingMemoHandsEachRequestAPathOfItsOwn() throws {
        func paths(_ memo: PathMemo) -> [Path] {
            var workspace = JSONParseWorkspace()
            return (0..<3).map { _ in
                let line = Array(#"{"op":"set","path":"/bench/lean/c0","value":1}"#.utf8)
                let decoded = line.withUnsafeBytes { decoder.decode($0, reusing: &workspace, paths: memo) }
                guard case .success(let request) = decoded, case .write(.set(let path, _), _) = request.operation
                else {
                    XCTFail("not a set: \(decoded)")
                    return Path.root
                }
                return path
            }
        }
        func storage(_ path: Path) -> UnsafeRawPointer? {
            path.segments.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        let copied = paths(PathMemo(copies: true))
        XCTAssertEqual(Set(copied), [try Path.parse("/bench/lean/c0")])
        XCTAssertEqual(Set(copied.map(storage)).count, 3, "each request's path has storage of its own")
        let shared = paths(PathMemo(copies: false))
        XCTAssertEqual(Set(shared.map(storage)).count, 1, "the first request's path is parsed, the next two share it")
    }

    func decode(_ line: String) -> RequestDecoder.Decoded {
        Array(line.utf8).withUnsafeBytes { decoder.decode($0) }
    }

    func testTheLastOfARepeatedFieldCountsAndUnknownOrNearNamesAreIgnored() throws {
        guard case .success(let request) = decode(#"{"op":"get","id":1,"path":"/a","path":"/b","id":2}"#),
            case .get(let path, _) = request.operation
        else { return XCTFail("not a get") }
        XCTAssertEqual(path, try Path.parse("/b"))
        XCTAssertEqual(request.id, .int(2))
        // Names that pack like a field's but differ in length or content name nothing.
        for line in [
            #"{"op":"get","path\u0000":"/a"}"#, #"{"op":"get","pat":"/a"}"#, #"{"op":"get","paths":"/a"}"#,
            #"{"op":"get","Path":"/a"}"#, #"{"op":"get","":"/a"}"#,
        ] {
            guard case .failure(let failure) = decode(line) else { return XCTFail("\(line) decoded") }
            XCTAssertEqual(failure.error.message, #"missing field "path""#, line)
        }
        guard case .failure(let failure) = decode(#"{"op":"transaction","path":"/n","value":1,"expectHashX":"h"}"#)
        else { return XCTFail("decoded") }
        XCTAssertEqual(failure.error.message, #"missing field "expect" or "expectHash""#)
    }

    func testEveryFieldIsFoundByItsNameAndNearNamesFindWhatTheirNamesAre() {
        func lookup(_ name: String) -> RequestField? {
            Array(name.utf8).withUnsafeBytes { RequestField(utf8: $0) }
        }
        for field in RequestField.allCases {
            let name = field.rawValue
            XCTAssertEqual(lookup(name), field, name)
            let nearNames = [
                name + "s", "x" + name, String(name.dropLast()), String(name.dropFirst()), name.uppercased(),
                name + "\u{0}", String(name.reversed()),
            ]
            for near in nearNames {
                XCTAssertEqual(lookup(near), RequestField(rawValue: near), near.debugDescription)
            }
        }
        XCTAssertNil(lookup(""))
    }

    func testAClusterNodeKeepsTheTextItForwards() throws {
        let decoder = RequestDecoder(limits: Limits(), keepsSource: true)
        let line = Array(#"{"id":1,"extra":0,"op":"set","op":"push","path":"/l","value":{"a":1},"wid":"c:1"}"#.utf8)
        guard case .success(let request) = line.withUnsafeBytes({ decoder.decode($0) }),
            let source = request.source
        else { return XCTFail("no source") }
        XCTAssertEqual(source, line)
        // The leader decodes the forwarded text as part of its `forward` line: the same request.
        let parsed = try JSONParser.parse(source)
        guard case .success(let again) = decoder.request(from: parsed) else { return XCTFail("source does not decode") }
        var first = ""
        var second = ""
        dump(request.operation, to: &first)
        dump(again.operation, to: &second)
        XCTAssertEqual(first, second)
        XCTAssertEqual(again.writeID, request.writeID)
        XCTAssertEqual(again.source.map { try? JSONParser.parse($0) }, parsed)
    }
}
