import HearthCore
import HearthJSON
import XCTest

@testable import HearthStorage

/// A replica decodes each record's payload from its bytes, without a JSON tree for the record
/// (`ReplicatedRecord.decodeWrite(_:rev:previousPath:reusing:)`); it must give back exactly the
/// write the leader logged, as decoding the parsed JSON does.
final class PayloadDecodingTests: XCTestCase {
    func decodeBytes(_ payload: [UInt8], rev: UInt64, previousPath: Path? = nil) throws -> CommittedWrite {
        var workspace = JSONParseWorkspace()
        let result = payload.withUnsafeBytes { raw in
            Result { () throws(StorageError) in
                try ReplicatedRecord.decodeWrite(raw, rev: rev, previousPath: previousPath, reusing: &workspace)
            }
        }
        return try result.get()
    }

    func assertSame(_ decoded: CommittedWrite, _ write: CommittedWrite, _ message: String) {
        XCTAssertEqual(decoded.rev, write.rev, message)
        XCTAssertEqual(decoded.tag, write.tag, message)
        XCTAssertEqual(decoded.overwrites.map(\.path), write.overwrites.map(\.path), message)
        XCTAssertEqual(decoded.overwrites.map(\.node), write.overwrites.map(\.node), message)
    }

    func testRandomWritesDecodeToWhatWasLogged() throws {
        var generator = RandomWrites(seed: 7)
        var reference = Database()
        let keys = [#"q"uote"#, #"back\slash"#, "é😀", "tab\tkey", "a", "-Nx0"].map { Key($0) }
        var previous: Path?
        for round in 0..<400 {
            var write = generator.write(rev: UInt64(round + 1), &reference)
            // Keys that JSON must escape, and write ids, on some of them.
            let overwrites = write.overwrites.map { overwrite in
                (path: Path([keys[round % keys.count]] + overwrite.path.segments), node: overwrite.node)
            }
            write = CommittedWrite(rev: write.rev, overwrites: overwrites)
            if round % 3 == 0, let id = WriteID(client: "app-\(round)", sequence: UInt64(round)) {
                write.tag = WriteTag(id: id, kind: [.write, .push, .transaction][round % 9 / 3], at: Int64(round))
            }
            let payload = Array(EncodedRecord(.write(write)).payload)
            let fromBytes = try decodeBytes(payload, rev: write.rev, previousPath: previous)
            assertSame(fromBytes, write, "round \(round): \(String(decoding: payload, as: UTF8.self))")
            assertSame(
                try ReplicatedRecord.decodeWrite(JSONParser.parse(payload), rev: write.rev), write, "round \(round)")
            previous = fromBytes.overwrites.last?.path ?? previous
        }
    }

    /// Consecutive records often write the same location; a path is shared whole only when it is
    /// exactly the one before (not a prefix of it, nor one that extends it).
    func testPathsNextToThePreviousOneDecodeAsWritten() throws {
        let texts = [
            "/a/b", "/a/b", "/a/b/c", "/a/b", "/a", "/", "/", "/a/b/.priority", "/a/b", "/a/bc", "/ab", "/a/b",
        ]
        var previous: Path?
        for (index, text) in texts.enumerated() {
            let path = try Path.parse(text, allowPriority: true)
            let node: Node =
                path.last == Key.priority ? .leaf(.number(.int(Int64(index)))) : .leaf(.string("v\(index)"))
            let write = CommittedWrite(rev: UInt64(index + 1), overwrites: [(path, node)])
            let decoded = try decodeBytes(
                Array(EncodedRecord(.write(write)).payload), rev: write.rev, previousPath: previous)
            assertSame(decoded, write, "\(text) after \(previous.map(\.description) ?? "nothing")")
            previous = decoded.overwrites.last?.path
        }
    }

    /// Decodes `text` both ways: the one-overwrite shortcut (nil when it declines) and the pair
    /// parser (nil when it throws).
    func bothWays(_ text: String) -> (shortcut: CommittedWrite?, pairs: CommittedWrite?) {
        var workspace = JSONParseWorkspace()
        return Array(text.utf8).withUnsafeBytes { raw in
            (
                (try? WritePayload.decodeOneOverwrite(raw, rev: 5, previousPath: nil, reusing: &workspace)) ?? nil,
                try? WritePayload.decodePairs(raw, rev: 5, previousPath: nil, reusing: &workspace)
            )
        }
    }

    func testTheOneOverwriteShortcutDecodesAsThePairParserDoes() throws {
        // (Values this deep are never logged: importing one is a recursion too deep for a debug
        // build's stack. One level past what the pair parser allows is refused before import.)
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        let tooDeep =
            String(repeating: "[", count: RecoveryLimits.depth - 1)
            + String(repeating: "]", count: RecoveryLimits.depth - 1)
        let taken = [
            #"[["/a/b","v"]]"#, #"[["/a",1]]"#, #"[["/a",-1.5e3]]"#, #"[["/a",12345678901234567890]]"#,
            #"[["/",{"x":{"y":[1,2,{"z":"w"}]}}]]"#, #"[["/a","q\"uo\\te \u00e9 \ud83d\ude00 é"]]"#,
            #"[["/a",true]]"#, #"[["/a",false]]"#, #"[["/a",null]]"#, #"[["/a/.priority",3]]"#, #"[["/a",{}]]"#,
            #"[["/a","]]"]]"#, #"[["/a",{"b":"]]"}]]"#, #"[["/-Nx0/c d",{".value":1,".priority":"p"}]]"#,
            "[[\"/a\",\(deep)]]",
        ]
        for text in taken {
            let (shortcut, pairs) = bothWays(text)
            guard let shortcut, let pairs else { return XCTFail("\(text.prefix(60)): \(String(describing: shortcut))") }
            assertSame(shortcut, pairs, String(text.prefix(60)))
        }
        // Declined: any other shape goes to the pair parser, which decodes it or says why not.
        let declined = [
            #"[ ["/a",1]]"#, #"[["/a", 1] ]"#, #"[["/a\/b",1]]"#, #"[["/é",1]]"#, #"[["/a",1],["/b",2]]"#,
            #"[{"wid":"app:1","kind":"push","at":1},["/a",1]]"#, #"[["/a",1]]]"#, #"[["/a",{"b":1]]"#,
            #"[["/a/.priority/b",1]]"#, "[[\"/a\",\(tooDeep)]]", "[[\"/a\tb\",1]]", #"[["/a"]]"#,
        ]
        for text in declined {
            let (shortcut, pairs) = bothWays(text)
            XCTAssertNil(shortcut, String(text.prefix(60)))
            var workspace = JSONParseWorkspace()
            let decoded = Array(text.utf8).withUnsafeBytes { raw in
                Result { () throws(FormatError) in
                    try WritePayload.decode(raw, rev: 5, previousPath: nil, reusing: &workspace)
                }
            }
            switch (decoded, pairs) {
            case (.success(let write), let pairs?): assertSame(write, pairs, String(text.prefix(60)))
            case (.failure, nil): break
            default: XCTFail("\(text.prefix(60)): decode and the pair parser disagree")
            }
        }
    }

    /// A path is written as the JSON string of its text whether its keys are gathered on the
    /// stack (most) or go through the JSON writer (keys it must escape, and long paths).
    func testPathsAreWrittenAsTheJSONStringOfTheirText() {
        let keys = [
            "a", "ok-1", "é", "😀", #"q"uote"#, #"back\slash"#, "tab\tkey", "line\u{2028}sep", "€uro", "ü\u{2029}",
            String(repeating: "k", count: 300), "x y", "\u{7F}del",
        ]
        var state: UInt64 = 17
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var paths = [Path.root]
        for _ in 0..<500 {
            paths.append(Path((0..<(1 + next(6))).map { _ in Key(keys[next(keys.count)]) }))
        }
        for path in paths {
            var written: [UInt8] = []
            WritePayload.writePath(path, into: &written)
            var expected: [UInt8] = []
            JSONWriter.writeString(path.description, into: &expected)
            XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: expected, as: UTF8.self))
        }
    }

    /// Strings, integers and booleans are read without the JSON parser (`plainScalar`): what it
    /// reads must be what the parser reads, and what it declines the parser still decodes (or
    /// refuses) on its own.
    func testPlainScalarsReadAsTheParserReadsThem() throws {
        var texts = [
            #""""#, #""x""#, "\"a b~\u{7F}\"", "0", "7", "-7", "10", "-0", "007", "-", "--1", "1-", "1.0", "1e3",
            "999999999999999999", "-999999999999999999", "1000000000000000000", "9223372036854775807",
            "true", "false", "null", "tru", "truex", "fals", #""é""#, #""a\"b""#, #""a\\b""#, "\"a\tb\"", #""abc"#,
            #"abc""#, #"""#, "",
        ]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            switch Int.random(in: 0..<3, using: &random) {
            case 0: texts.append(String(Int64.random(in: .min ... .max, using: &random) >> Int64.random(in: 0..<63)))
            case 1:
                let bytes = (0..<Int.random(in: 0..<12)).map { _ in UInt8.random(in: 0x1E...0x7F, using: &random) }
                texts.append("\"" + String(decoding: bytes, as: UTF8.self) + "\"")
            default: texts.append(Bool.random(using: &random) ? "true" : "false")
            }
        }
        for text in texts {
            let parsed = (try? JSONParser.parse(Array(text.utf8))).flatMap(LeafValue.init(scalar:))
            let plain = Array(text.utf8).withUnsafeBytes { WritePayload.plainScalar($0) }
            if let plain {
                XCTAssertEqual(plain, parsed, text)
            }
            // Declined or read, the whole payload decodes as the pair parser decodes it.
            let (shortcut, pairs) = bothWays("[[\"/a\",\(text)]]")
            switch (shortcut, pairs) {
            case (let shortcut?, let pairs?): assertSame(shortcut, pairs, text)
            case (nil, _): XCTAssertNil(plain, text)
            case (_?, nil): XCTFail("\(text): the shortcut read what the pair parser refuses")
            }
        }
    }

    func testPayloadsThatAreNotWritesAreRefusedWithTheReason() throws {
        let write = CommittedWrite(rev: 3, overwrites: [(try Path.parse("/a/b"), .leaf(.string("v")))])
        let payload = Array(EncodedRecord(.write(write)).payload)
        for end in 0..<payload.count {
            XCTAssertThrowsError(try decodeBytes(Array(payload[..<end]), rev: 3), "prefix of \(end) bytes")
        }
        let cases = [
            (#"{"a":1}"#, "not a JSON array"),
            (#"[["/a"]]"#, "not valid JSON"),
            (#"[["/a/.priority/b",1]]"#, "has .priority before its end"),
            (#"[{"wid":"nocolon","kind":"push","at":1},["/a",1]]"#, "invalid write id tag"),
        ]
        for (text, reason) in cases {
            XCTAssertThrowsError(try decodeBytes(Array(text.utf8), rev: 1), text) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(text): \(error)")
            }
        }
    }
}
