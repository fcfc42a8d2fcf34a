import HearthCore
import HearthJSON
import XCTest

@testable import HearthProtocol

/// The SDKs' puts and merges are read without a tree when they come in the SDKs' own member
/// order (`FirebaseInbound.write(in:…)`): they must decode exactly as the general path decodes
/// the same message, and anything else must be left to the general path.
final class FirebaseInboundTests: XCTestCase {
    let decoder = RequestDecoder(limits: Limits(maxKeyBytes: 16, maxDepth: 4, maxStringBytes: 64))

    /// A decoded message, written out in full.
    func described(_ inbound: FirebaseInbound?) -> String {
        var text = ""
        switch inbound {
        case .request(let number, .operation(let operation))?:
            dump(number, to: &text)
            dump(operation, to: &text)
        case .refused(let number, let error)?:
            text = "\(number) \(error.code) \(error.message)"
        case let other?:
            dump(other, to: &text)
        case nil:
            text = "nil"
        }
        return text
    }

    func fast(_ message: String) -> FirebaseInbound? {
        var workspace = JSONParseWorkspace()
        return Array(message.utf8).withUnsafeBytes {
            FirebaseInbound.write(in: $0, decoder: decoder, workspace: &workspace, paths: nil)
        }
    }

    /// The general path, forced by writing the body's members in the other order.
    func general(_ message: String) -> FirebaseInbound? {
        var workspace = JSONParseWorkspace()
        return try? FirebaseInbound.decode(Array(message.utf8), decoder: decoder, workspace: &workspace)
    }

    func testWritesInTheSDKsOrderDecodeAsTheGeneralPathDoes() {
        let cases: [(number: Int, action: String, body: String)] = [
            (2, "p", #"{"p":"/a","d":1}"#),
            (17, "p", #"{"p":"/ts","d":{".sv":"timestamp"}}"#),
            (6, "m", #"{"p":"/","d":{"a":2,"b/c":3}}"#),
            (4, "p", #"{"p":"/pr/b/.priority","d":5}"#),
            (5, "p", #"{"d":"x","p":"/a"}"#),
            // Refused alike: a bad key, a value too deep, a merge that is not an object.
            (9, "p", #"{"p":"/a.b","d":1}"#),
            (9, "p", #"{"p":"/a","d":{"b":{"c":{"d":{"e":1}}}}}"#),
            (3, "m", #"{"p":"/a","d":5}"#),
        ]
        for (number, action, body) in cases {
            let sdk = #"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#
            // The same request in another member order, which only the general path reads.
            let reordered = #"{"d":{"a":"\#(action)","b":\#(body),"r":\#(number)},"t":"d"}"#
            XCTAssertNil(fast(reordered), reordered)
            XCTAssertNotNil(fast(sdk), sdk)
            XCTAssertEqual(described(fast(sdk)), described(general(reordered)), sdk)
            XCTAssertEqual(described(general(sdk)), described(general(reordered)), sdk)
        }
    }

    func testEverythingElseIsLeftToTheGeneralPath() {
        for message in [
            #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"/a","d":null}}}"#,  // a remove
            #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"/a","d":1,"h":""}}}"#,  // a transaction
            #"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/a","h":""}}}"#,  // a listen
            #"{"t":"d","d":{"r":1,"a":"pp","b":{"p":"/a","d":1}}}"#,  // another action
            #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"/a","d":1}}}}"#,  // a brace too many
            #"{"t":"d","d":{"r":1,"a":"p","b":{"p":"/a","d":1"#,  // cut short
            #"{"t":"d","d":{"r":,"a":"p","b":{"p":"/a","d":1}}}"#,  // no number
            #"{"t":"c","d":{"t":"p","d":{}}}"#,  // a control message
        ] {
            XCTAssertNil(fast(message), message)
        }
    }
}
