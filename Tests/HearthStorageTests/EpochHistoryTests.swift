import HearthJSON
import HearthStorage
import XCTest

final class EpochHistoryTests: XCTestCase {
    func testTheFileKeepsTheOriginAndTheEpochs() throws {
        var history = EpochHistory([.init(epoch: 3, firstRev: 1), .init(epoch: 7, firstRev: 40)], origin: "abc")
        let read = try XCTUnwrap(EpochHistory(fileJSON: try JSONParser.parse(history.fileJSON.serialized)))
        XCTAssertEqual(read, history)
        XCTAssertEqual(read.origin, "abc")
        history.begin(epoch: 9, firstRev: 52)
        XCTAssertEqual(history.origin, "abc", "a new leadership keeps the origin")
        XCTAssertEqual(history.json, try JSONParser.parse("[[3,1],[7,40],[9,52]]"), "the wire form is the bare list")
    }

    func testAnEarlierHistoryFileReadsWithoutAnOrigin() throws {
        let read = try XCTUnwrap(EpochHistory(fileJSON: try JSONParser.parse("[[2,1],[5,9]]")))
        XCTAssertEqual(read.entries.map(\.epoch), [2, 5])
        XCTAssertNil(read.origin)
    }

    func testMalformedFilesAreRefused() throws {
        for text in [
            #"{"origin":"a"}"#, #"{"origin":"","epochs":[]}"#, #"{"origin":1,"epochs":[]}"#,
            #"{"epochs":[[5,9],[2,1]]}"#,
        ] {
            XCTAssertNil(EpochHistory(fileJSON: try JSONParser.parse(text)), text)
        }
    }

    func testOriginsAreRandomAndHex() {
        let origins = (0..<100).map { _ in EpochHistory.newOrigin() }
        XCTAssertEqual(Set(origins).count, 100)
        XCTAssertTrue(origins.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}
