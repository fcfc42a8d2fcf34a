import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import XCTest

@testable import HearthEngine
@testable import HearthServer

/// A replica reads its leader's `wal` lines by position and keeps the payload's bytes as they
/// came (it logs them); any other spelling of the line still reads, through the JSON parser.
final class WalLineTests: XCTestCase {
    private func line(_ record: EncodedRecord, rev: UInt64, epoch: UInt64, confirmedRev: UInt64) -> [UInt8] {
        let line = WalLineWriter.lines(end: WalLineWriter.end(confirmedRev: confirmedRev)) {
            $0(record.payload, record.isWrite, rev, epoch)
        }
        return line.dropLast()  // the framer takes the newline
    }

    /// The one record a line holds, read by position.
    private struct Read {
        let record: LinkRecords.Record
        let write: CommittedWrite?
        let payload: [UInt8]
    }

    private func read(_ bytes: [UInt8]) -> Read? {
        guard let run = bytes.withUnsafeBytes({ LinkHandler.walRecord($0) }), run.count == 1 else { return nil }
        return Read(record: run.records[0], write: run.writes[0], payload: Array(run.payload(at: 0)))
    }

    /// Every record of `messages`, in order.
    private func records(_ messages: [LinkMessage]) -> [Read] {
        messages.flatMap { message -> [Read] in
            guard case .records(let run) = message else { return [] }
            return (0..<run.count).map {
                Read(record: run.records[$0], write: run.writes[$0], payload: Array(run.payload(at: $0)))
            }
        }
    }

    /// A leader writes a batch's lines in place, into room sized beforehand: byte for byte the
    /// lines docs/PROTOCOL.md ("Peer operations") spells, for revisions of every length, and for epochs that change
    /// from one record to the next (a replica catching up from the retained log).
    func testLinesWrittenInPlaceAreTheLinesTheContractSpells() {
        let write = CommittedWrite(rev: 1, overwrites: [(Path([Key("a")]), Node.leaf(.string("v")))])
        let payload = EncodedRecord(.write(write)).payload
        let end = WalLineWriter.end(confirmedRev: 42)
        var power: UInt64 = 1
        var revs: [UInt64] = [0, UInt64(Int64.max)]
        for _ in 0..<18 {
            revs += [power - 1, power, power + 1]
            power *= 10
        }
        var records: [(rev: UInt64, epoch: UInt64, isWrite: Bool)] = []
        for epoch: UInt64 in [1, 12_345] {
            for rev in revs {
                for isWrite in [true, false] { records.append((rev, epoch, isWrite)) }
            }
        }
        records.append((7, 1, true))  // back to an earlier epoch
        var expected: [UInt8] = []
        for record in records {
            expected += Array(#"{"event":"wal","rev":\#(record.rev),"epoch":\#(record.epoch),"#.utf8)
            expected += Array((record.isWrite ? #""w":"# : #""od":"#).utf8) + payload
            expected += Array(#","confirmedRev":42}"#.utf8) + [UInt8(ascii: "\n")]
        }
        let written = WalLineWriter.lines(end: end) { line in
            for record in records { line(payload, record.isWrite, record.rev, record.epoch) }
        }
        XCTAssertEqual(written.count, expected.count)
        XCTAssertEqual(written, expected)
    }

    func testALeadersWriteLineKeepsItsPayloadBytes() throws {
        let write = CommittedWrite(
            rev: 12, overwrites: [(Path([Key("a"), Key("b")]), Node.leaf(.string("x,\"confirmedRev\":1}")))])
        let record = EncodedRecord(.write(write))
        let read = try XCTUnwrap(read(line(record, rev: 12, epoch: 3, confirmedRev: 11)))
        let decoded = try XCTUnwrap(read.write)
        XCTAssertEqual([read.record.rev, read.record.epoch, read.record.confirmedRev, decoded.rev], [12, 3, 11, 12])
        XCTAssertTrue(read.record.isWrite)
        XCTAssertEqual(read.payload, Array(record.payload))
        XCTAssertEqual(decoded.overwrites.map(\.path), write.overwrites.map(\.path))
        XCTAssertEqual(decoded.overwrites.map(\.node), write.overwrites.map(\.node))
    }

    func testAnOnDisconnectLineKeepsItsPayloadBytes() throws {
        let record = EncodedRecord(.write(CommittedWrite(rev: 1, overwrites: [])), payload: Array("[]".utf8)[...])
        let bytes = Array(#"{"event":"wal","rev":4,"epoch":2,"od":{"add":[]},"confirmedRev":0}"#.utf8)
        let read = try XCTUnwrap(read(bytes))
        XCTAssertEqual([read.record.rev, read.record.epoch, read.record.confirmedRev], [4, 2, 0])
        XCTAssertFalse(read.record.isWrite)
        XCTAssertNil(read.write)
        XCTAssertEqual(read.payload, Array(#"{"add":[]}"#.utf8))
        XCTAssertEqual(Array(record.payload), Array("[]".utf8))
    }

    func testRecordsReadTogetherEachKeepTheirOwnPayload() throws {
        // 100 records in one read: handed over at 64 (a slice of a burst) and at the read's end,
        // each group's payloads in one buffer that the messages slice.
        let received = NIOLockedValueBox<[LinkMessage]>([])
        let handler = LinkHandler(
            link: ReplicaLink(id: 1, leader: "127.0.0.1:1"), maxLineBytes: 1 << 20, logger: quietLogger
        ) { _, messages in received.withLockedValue { $0 += messages } }
        let channel = EmbeddedChannel(handler: handler)
        var bytes: [UInt8] = []
        var expected: [[UInt8]] = []
        for rev in UInt64(1)...100 {
            let value = Node.leaf(.string(String(repeating: "v", count: Int(rev))))
            let write = CommittedWrite(rev: rev, overwrites: [(Path([Key("a"), Key("\(rev)")]), value)])
            let record = EncodedRecord(.write(write))
            expected.append(Array(record.payload))
            bytes += line(record, rev: rev, epoch: 1, confirmedRev: rev - 1) + [UInt8(ascii: "\n")]
        }
        try channel.writeInbound(ByteBuffer(bytes: bytes))
        channel.pipeline.fireChannelReadComplete()
        let messages = received.withLockedValue { $0 }
        let records = records(messages)
        XCTAssertEqual(records.map(\.record.rev), Array(1...100))
        XCTAssertEqual(records.map { $0.write?.rev }, Array(1...100))
        XCTAssertEqual(records.map(\.payload), expected)
        _ = try channel.finish()
    }

    func testOtherSpellingsAreLeftToTheJSONParser() throws {
        for text in [
            #"{"rev":4,"event":"wal","epoch":2,"w":[],"confirmedRev":0}"#,  // another order
            #"{"event":"wal","rev":4,"epoch":2,"w":[],"confirmedRev":0} "#,  // a trailing space
            #"{"event":"wal","rev":4,"epoch":2,"w":[]}"#,  // no confirmedRev
            #"{"event":"heartbeat","rev":4,"confirmedRev":0}"#,
        ] {
            XCTAssertNil(read(Array(text.utf8)), text)
        }
        let json = try JSONParser.parse(#"{"rev":4,"event":"wal","epoch":2,"w":[],"confirmedRev":3}"#)
        let message = try XCTUnwrap(LinkHandler.message(json))
        let read = try XCTUnwrap(records([message]).first)
        XCTAssertEqual([read.record.rev, read.record.epoch, read.record.confirmedRev], [4, 2, 3])
        let write = try XCTUnwrap(read.write)
        XCTAssertEqual(write.rev, 4)
        XCTAssertTrue(write.overwrites.isEmpty)
        XCTAssertEqual(read.payload, Array("[]".utf8))
    }

    func testAPayloadThatIsNotAValidWriteIsToldApart() {
        for payload in [#"[["/a",]"#, #"[["/a"]]"#, #"{"a":1}"#, #"[["/a/.priority/b",1]]"#] {
            let bytes = Array(#"{"event":"wal","rev":4,"epoch":2,"w":\#(payload),"confirmedRev":0}"#.utf8)
            var run = LinkRecords()
            var previousPath: Path?
            var workspace = JSONParseWorkspace()
            let outcome = bytes.withUnsafeBytes {
                LinkHandler.readRecord($0, into: &run, previousPath: &previousPath, reusing: &workspace)
            }
            guard case .invalidWrite = outcome else { return XCTFail("\(payload): \(outcome)") }
            XCTAssertTrue(run.isEmpty)
        }
    }

    func testAPathWithEscapesRoundTrips() throws {
        let write = CommittedWrite(
            rev: 5,
            overwrites: [(Path([Key("q\"uote"), Key("back\\slash"), Key("é\u{2028}")]), Node.leaf(.bool(true)))])
        let record = EncodedRecord(.write(write))
        let decoded = try XCTUnwrap(read(line(record, rev: 5, epoch: 1, confirmedRev: 0))?.write)
        XCTAssertEqual(decoded.overwrites.map(\.path), write.overwrites.map(\.path))
        XCTAssertEqual(decoded.overwrites.map(\.path.description), ["/q\"uote/back\\slash/é\u{2028}"])
    }
}
