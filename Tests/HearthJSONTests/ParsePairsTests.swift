import HearthJSON
import XCTest

/// `JSONParser.parsePairs` reads an array of `[string, value]` pairs without building it; it must
/// accept what `JSONParser.parse` reads as such an array, reject everything else, and report
/// truncation at the same offsets.
final class ParsePairsTests: XCTestCase {
    /// What `parsePairs` made of a document.
    enum Outcome: Equatable {
        case pairs(leading: JSONValue?, [JSONMember])
        case notAnArray
        case failure(JSONError)
    }

    func parsePairs(_ bytes: [UInt8], limits: JSONLimits = JSONLimits(), workspace: inout JSONParseWorkspace) -> Outcome
    {
        var leading: JSONValue?
        var pairs: [JSONMember] = []
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) -> Bool in
                try JSONParser.parsePairs(
                    of: raw, limits: limits, reusing: &workspace, leading: { leading = $0 },
                    pair: { text, value in pairs.append(JSONMember(String(decoding: text, as: UTF8.self), value)) })
            }
        }
        switch result {
        case .success(let isArray): return isArray ? .pairs(leading: leading, pairs) : .notAnArray
        case .failure(let error): return .failure(error)
        }
    }

    /// The pairs `parse` finds in a document, when it reads as an array of pairs (the first
    /// element may be an object); nil when it does not.
    func expectedPairs(_ value: JSONValue) -> Outcome? {
        guard case .array(let elements) = value else { return nil }
        var leading: JSONValue?
        var rest = elements[...]
        if case .object? = elements.first {
            leading = elements[0]
            rest = elements.dropFirst()
        }
        var pairs: [JSONMember] = []
        for element in rest {
            guard case .array(let pair) = element, pair.count == 2, case .string(let text) = pair[0] else { return nil }
            pairs.append(JSONMember(text, pair[1]))
        }
        return .pairs(leading: leading, pairs)
    }

    static let documents = [
        #"[["/a/b",{"x":[1,2.5,{"y":null}],"z":"é"}],["/a/c","s"]]"#,
        #"[{"wid":"app:7","kind":"push","at":1795326318420},["/rooms/-Nx","v"]]"#,
        #" [ [ "/q\"uote" , "v\u0061lue with \"escapes\"" ] , [ "/\u00e9\ud83d\ude00" , [ [ ] ] ] ] "#,
        #"[]"#,
        #"[["/",null]]"#,
    ]

    func testEveryPrefixAndEveryByteChangeAgreesWithParse() {
        var workspace = JSONParseWorkspace()
        for limits in [JSONLimits(), JSONLimits(maxDepth: 3, maxStringBytes: 8), JSONLimits(maxDepth: 1)] {
            for document in Self.documents {
                let bytes = Array(document.utf8)
                var changed: [[UInt8]] = []
                for i in bytes.indices {
                    for replacement in [
                        UInt8(ascii: "]"), UInt8(ascii: ","), UInt8(ascii: "\""), UInt8(ascii: "{"), 0xC3,
                    ] {
                        var variant = bytes
                        variant[i] = replacement
                        changed.append(variant)
                    }
                }
                for variant in changed + [bytes + Array("x".utf8), bytes] {
                    let text = String(decoding: variant, as: UTF8.self)
                    let outcome = parsePairs(variant, limits: limits, workspace: &workspace)
                    let startsAnArray =
                        variant.drop { [0x20, 0x0A, 0x0D, 0x09].contains($0) }.first == UInt8(ascii: "[")
                    guard startsAnArray else {
                        XCTAssertEqual(outcome, .notAnArray, text)
                        continue
                    }
                    switch Result(catching: { () throws(JSONError) in try JSONParser.parse(variant, limits: limits) }) {
                    case .success(let value):
                        if let expected = expectedPairs(value) {
                            XCTAssertEqual(outcome, expected, "\(text) with \(limits)")
                        } else {
                            guard case .failure = outcome else { return XCTFail("accepted \(text) with \(limits)") }
                        }
                    case .failure(let error):
                        guard case .failure(let got) = outcome else {
                            return XCTFail("accepted \(text) with \(limits)")
                        }
                        // A document with the shape of pairs up to where parse finds it broken (the
                        // original's bytes) fails there too: parsePairs is only stricter.
                        if variant.prefix(error.offset).elementsEqual(bytes.prefix(error.offset)) {
                            XCTAssertEqual(got.offset, error.offset, "\(text) with \(limits)")
                        }
                    }
                }
                // Truncated anywhere: the same offset as parse.
                for end in 0..<bytes.count {
                    let prefix = Array(bytes[..<end])
                    let outcome = parsePairs(prefix, limits: limits, workspace: &workspace)
                    switch Result(catching: { () throws(JSONError) in try JSONParser.parse(prefix, limits: limits) }) {
                    case .success(let value):  // the document without its trailing whitespace
                        XCTAssertEqual(outcome, expectedPairs(value), String(decoding: prefix, as: UTF8.self))
                    case .failure(let error):
                        if case .failure(let got) = outcome {
                            XCTAssertEqual(got.offset, error.offset, String(decoding: prefix, as: UTF8.self))
                        } else if prefix.contains(UInt8(ascii: "[")) {
                            XCTFail("accepted \(String(decoding: prefix, as: UTF8.self))")
                        }
                    }
                }
            }
        }
    }

    /// A string with escapes is decoded into the parser's scratch buffer; the pair's value may hold
    /// one too, and must not overwrite the path handed over with it.
    func testAnEscapedStringAndAnEscapedValueArriveBothIntact() {
        var workspace = JSONParseWorkspace()
        let outcome = parsePairs(
            Array(#"[["/a\"b",{"k":"c\\d","l":["e\u00e9"]}]]"#.utf8), workspace: &workspace)
        XCTAssertEqual(
            outcome,
            .pairs(
                leading: nil,
                [
                    JSONMember(
                        #"/a"b"#,
                        .object([JSONMember("k", .string(#"c\d"#)), JSONMember("l", .array([.string("eé")]))]))
                ]))
    }

    func testShapesThatAreNotPairsAreRefused() {
        var workspace = JSONParseWorkspace()
        for document in [
            #"[1]"#, #"[["/a"]]"#, #"[["/a",1,2]]"#, #"[[1,2]]"#, #"[["/a",1],{"wid":"x"}]"#, #"[{"a":1},{"b":2}]"#,
        ] {
            guard case .failure = parsePairs(Array(document.utf8), workspace: &workspace) else {
                XCTFail("accepted \(document)")
                continue
            }
        }
        XCTAssertEqual(parsePairs(Array(#"{"a":1}"#.utf8), workspace: &workspace), .notAnArray)
        XCTAssertEqual(parsePairs(Array(#""[]""#.utf8), workspace: &workspace), .notAnArray)
    }
}
