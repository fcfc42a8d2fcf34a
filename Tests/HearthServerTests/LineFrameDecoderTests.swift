import HearthProtocol
import NIOCore
import NIOEmbedded
import XCTest

/// The line framing every connection's input goes through, fed random streams in random pieces
/// and compared with the framing rules written out plainly.
final class LineFrameDecoderTests: XCTestCase {
    /// What the framing must produce for `stream`: each `\n`-terminated line without its `\n` and
    /// one `\r` before it; blank lines dropped; the first line over `maxLength` (an unterminated
    /// tail counts, less a final `\r`) gives `nil` (too large) and ends the output; any other
    /// unterminated tail is dropped.
    func expectedFrames(_ stream: [UInt8], maxLength: Int) -> [[UInt8]?] {
        var frames: [[UInt8]?] = []
        var rest = stream[...]
        while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
            var line = Array(rest[..<newline])
            rest = rest[(newline + 1)...]
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            if line.count > maxLength { return frames + [nil] }
            if !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { frames.append(line) }
        }
        let pending = rest.count - (rest.last == UInt8(ascii: "\r") ? 1 : 0)
        return pending > maxLength ? frames + [nil] : frames
    }

    /// 2,000 random streams, each with a random line limit, cut into random pieces (of 1–3 bytes
    /// in even rounds, 1–40 in odd ones).
    func forRandomStreams(
        _ body: (_ round: Int, _ maxLength: Int, _ stream: [UInt8], _ pieces: [ArraySlice<UInt8>]) throws -> Void
    ) rethrows {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab{}\" :\t\r\r\n\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 6)
        for round in 0..<2000 {
            let maxLength = Int.random(in: 1...24, using: &generator)
            let stream = (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            var pieces: [ArraySlice<UInt8>] = []
            var offset = 0
            while offset < stream.count {
                let size = min(stream.count - offset, Int.random(in: 1...(round % 2 == 0 ? 3 : 40), using: &generator))
                pieces.append(stream[offset..<(offset + size)])
                offset += size
            }
            try body(round, maxLength, stream, pieces)
        }
    }

    func testRandomStreamsInRandomPiecesFrameLikeTheRules() throws {
        try forRandomStreams { round, maxLength, stream, pieces in
            let channel = EmbeddedChannel(handler: LineFrameDecoder(maxLength: maxLength))
            for piece in pieces { try channel.writeInbound(channel.allocator.buffer(bytes: piece)) }
            var frames: [[UInt8]?] = []
            while let frame = try channel.readInbound(as: LineFrame.self) {
                switch frame {
                case .line(let line): frames.append(Array(line.readableBytesView))
                case .tooLarge: frames.append(nil)
                }
            }
            _ = try channel.finish()
            XCTAssertEqual(frames, expectedFrames(stream, maxLength: maxLength), "round \(round): \(stream)")
        }
    }

    /// The framer's two forms, lines as buffers and lines as bytes, frame the same random streams
    /// in the same random pieces alike, and like the rules.
    func testLinesAsBytesFrameLikeLinesAsBuffers() {
        forRandomStreams { round, maxLength, stream, pieces in
            var buffers = LineFramer(maxLength: maxLength)
            var bytes = LineFramer(maxLength: maxLength)
            var fromBuffers: [[UInt8]?] = []
            var fromBytes: [[UInt8]?] = []
            for bytesOfPiece in pieces {
                // A piece that starts past its buffer's first byte, as reads into a shared buffer do.
                var piece = ByteBuffer(bytes: [0x41] + bytesOfPiece)
                piece.moveReaderIndex(forwardBy: 1)
                buffers.frames(in: piece) { frame in
                    switch frame {
                    case .line(let line): fromBuffers.append(Array(line.readableBytesView))
                    case .tooLarge: fromBuffers.append(nil)
                    }
                }
                bytes.rawFrames(in: piece) { frame in
                    switch frame {
                    case .line(let line): fromBytes.append(Array(line))
                    case .tooLarge: fromBytes.append(nil)
                    }
                }
            }
            let expected = expectedFrames(stream, maxLength: maxLength)
            XCTAssertEqual(fromBuffers, expected, "round \(round): \(stream)")
            XCTAssertEqual(fromBytes, expected, "round \(round): \(stream)")
        }
    }
}
