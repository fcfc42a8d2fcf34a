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

    func testRandomStreamsInRandomPiecesFrameLikeTheRules() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab{}\" :\t\r\r\n\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 6)
        for round in 0..<2000 {
            let maxLength = Int.random(in: 1...24, using: &generator)
            let stream = (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            let channel = EmbeddedChannel(handler: LineFrameDecoder(maxLength: maxLength))
            var offset = 0
            while offset < stream.count {
                let size = min(stream.count - offset, Int.random(in: 1...(round % 2 == 0 ? 3 : 40), using: &generator))
                try channel.writeInbound(channel.allocator.buffer(bytes: stream[offset..<(offset + size)]))
                offset += size
            }
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
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab{}\" :\t\r\r\n\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 6)
        for round in 0..<2000 {
            let maxLength = Int.random(in: 1...24, using: &generator)
            let stream = (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            var buffers = LineFramer(maxLength: maxLength)
            var bytes = LineFramer(maxLength: maxLength)
            var fromBuffers: [[UInt8]?] = []
            var fromBytes: [[UInt8]?] = []
            var offset = 0
            while offset < stream.count {
                let size = min(stream.count - offset, Int.random(in: 1...(round % 2 == 0 ? 3 : 40), using: &generator))
                // A piece that starts past its buffer's first byte, as reads into a shared buffer do.
                var piece = ByteBuffer(bytes: [0x41] + stream[offset..<(offset + size)])
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
                offset += size
            }
            let expected = expectedFrames(stream, maxLength: maxLength)
            XCTAssertEqual(fromBuffers, expected, "round \(round): \(stream)")
            XCTAssertEqual(fromBytes, expected, "round \(round): \(stream)")
        }
    }
}
