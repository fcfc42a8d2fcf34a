public import NIOCore

/// One inbound frame of the line protocol.
public enum LineFrame: Sendable {
    /// A non-blank line without its `\n` (and without a `\r` before it).
    case line(ByteBuffer)
    /// A line longer than the limit: the connection must be answered `too_large` and closed.
    case tooLarge
}

/// Splits the inbound byte stream into lines of at most `maxLength` bytes. Blank lines are
/// dropped; an unterminated line at end of stream (a client that vanished mid-line) is
/// discarded. After a too-long line, everything else is discarded.
public struct LineFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = LineFrame

    let maxLength: Int
    /// Bytes of the current line already searched for a newline.
    var scanned = 0
    var failed = false

    public init(maxLength: Int) { self.maxLength = maxLength }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if failed {
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            return .needMoreData
        }
        let view = buffer.readableBytesView
        guard let newline = view[(view.startIndex + scanned)...].firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = view.count
            // A `\r` at the end may be the first half of a `\r\n` split across reads: it counts
            // only once a byte other than `\n` follows it.
            let pending = scanned - (view.last == UInt8(ascii: "\r") ? 1 : 0)
            if pending > maxLength {
                failed = true
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                context.fireChannelRead(wrapInboundOut(.tooLarge))
            }
            return .needMoreData
        }
        scanned = 0
        var length = newline - view.startIndex
        let lineEnd = buffer.readerIndex + length
        if length > 0, buffer.getInteger(at: lineEnd - 1, as: UInt8.self) == UInt8(ascii: "\r") { length -= 1 }
        if length > maxLength {
            failed = true
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            context.fireChannelRead(wrapInboundOut(.tooLarge))
            return .needMoreData
        }
        // readSlice cannot fail: `length` bytes are readable.
        guard let line = buffer.readSlice(length: length) else { return .needMoreData }
        buffer.moveReaderIndex(to: lineEnd + 1)
        if !Self.isBlank(line) {
            context.fireChannelRead(wrapInboundOut(.line(line)))
        }
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        return .needMoreData
    }

    static func isBlank(_ line: ByteBuffer) -> Bool {
        line.readableBytesView.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
    }
}
