import HearthJSON
import XCTest

/// `JSONParser.parseMembers` reads an object member by member; it must accept, reject and
/// report exactly what `JSONParser.parse` does, at the same offsets.
final class ParseMembersTests: XCTestCase {
    /// What `parseMembers` made of a document: its members (keys from their UTF-8), "not an
    /// object", or its error.
    enum Outcome: Equatable {
        case members([JSONMember])
        case notAnObject
        case failure(JSONError)
    }

    func parseMembers(_ bytes: [UInt8], limits: JSONLimits, workspace: inout JSONParseWorkspace) -> Outcome {
        var members: [JSONMember] = []
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) -> Bool in
                try JSONParser.parseMembers(of: raw, limits: limits, reusing: &workspace) { key, value in
                    members.append(JSONMember(String(decoding: key, as: UTF8.self), value.json))
                }
            }
        }
        switch result {
        case .success(let isObject): return isObject ? .members(members) : .notAnObject
        case .failure(let error): return .failure(error)
        }
    }

    /// What `parse` says `parseMembers` should make of a document.
    func expected(_ bytes: [UInt8], limits: JSONLimits) -> Outcome {
        let leading = bytes.prefix { [0x20, 0x0A, 0x0D, 0x09].contains($0) }
        let startsAnObject = bytes.dropFirst(leading.count).first == UInt8(ascii: "{")
        do {
            let value = try JSONParser.parse(bytes, limits: limits)
            guard case .object(let members) = value else { return .notAnObject }
            return .members(members)
        } catch {
            return startsAnObject ? .failure(error) : .notAnObject
        }
    }

    func testEveryPrefixAndEveryByteChangeOfRequestsAgreesWithParse() {
        let documents = [
            #"{"id":1,"op":"set","path":"/a/b","value":{"x":[1,2.5,{"y":null}],"z":"é"}}"#,
            #" { "op" : "update" , "values" : { "a/b" : true , "c" : -0 } , "id" : "r1" } "#,
            #"{"p\u0061th":"/a","op":"get","query":{"orderBy":"$key","limitToFirst":3}}"#,
            #"{"p\u0061th":"/\u0061","\u006fp":"s\u0065t","v\u0061lue":"\u00e9"}"#,
            #"{"id":1,"id":2,"\ud83d\ude00":[[[]]],"":{}}"#,
            #"{}"#,
            #"[{"a":1}]"#,
            #""op""#,
        ]
        var workspace = JSONParseWorkspace()
        for limits in [JSONLimits(), JSONLimits(maxDepth: 2, maxStringBytes: 6), JSONLimits(maxDepth: 0)] {
            for document in documents {
                let bytes = Array(document.utf8)
                var variants = (0...bytes.count).map { Array(bytes[..<$0]) }
                for i in bytes.indices {
                    for replacement in [UInt8(ascii: "}"), UInt8(ascii: ","), UInt8(ascii: "\""), 0x0A, 0xC3, 0x01] {
                        var changed = bytes
                        changed[i] = replacement
                        variants.append(changed)
                    }
                    variants.append(bytes + Array("x".utf8))
                }
                for variant in variants {
                    let text = String(decoding: variant, as: UTF8.self)
                    XCTAssertEqual(
                        parseMembers(variant, limits: limits, workspace: &workspace),
                        expected(variant, limits: limits), "\(text) with \(limits)")
                }
            }
        }
    }

    func testKeysWithEscapesArriveDecodedAndRepeatedKeysArriveEachTime() throws {
        var workspace = JSONParseWorkspace()
        let outcome = parseMembers(
            Array(#"{"a\"b":1,"\u00e9":2,"a\"b":3}"#.utf8), limits: JSONLimits(), workspace: &workspace)
        XCTAssertEqual(
            outcome,
            .members([JSONMember("a\"b", .int(1)), JSONMember("é", .int(2)), JSONMember("a\"b", .int(3))]))
    }
}
