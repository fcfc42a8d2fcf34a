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
///
/// Whole lines are handed on as slices of the buffer they arrived in; only a line split across
/// reads is gathered into a buffer of its own. (NIO's generic `ByteToMessageHandler` costs
/// several thousand instructions per line; this costs a byte search.)
public final class LineFrameDecoder: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = LineFrame

    let maxLength: Int
    /// The start of a line whose end has not arrived yet.
    private var partial: ByteBuffer?
    private var failed = false

    public init(maxLength: Int) { self.maxLength = maxLength }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var buffer = unwrapInboundIn(data)
        // Taken out of `partial` first, so that appending to it copies nothing (a line split
        // across many reads is gathered in one growing buffer, not copied at every read).
        if var head = partial.take() {
            guard let length = Self.lineLength(in: buffer) else {
                head.writeBuffer(&buffer)
                keepPartial(head, context: context)
                return
            }
            // readSlice cannot fail: the line and its `\n` are readable.
            guard var rest = buffer.readSlice(length: length) else { return }
            buffer.moveReaderIndex(forwardBy: 1)
            head.writeBuffer(&rest)
            emit(head, context: context)
        }
        while !failed, let length = Self.lineLength(in: buffer), let line = buffer.readSlice(length: length) {
            buffer.moveReaderIndex(forwardBy: 1)
            emit(line, context: context)
        }
        if !failed, buffer.readableBytes > 0 { keepPartial(buffer, context: context) }
    }

    /// The bytes before the first `\n` of `buffer`, or nil when it holds none.
    private static func lineLength(in buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { bytes in
            bytes.firstIndex(of: UInt8(ascii: "\n"))
        }
    }

    /// Keeps an unterminated line, unless it is already too long. A `\r` at its end may be the
    /// first half of a `\r\n` split across reads: it counts only once a byte other than `\n`
    /// follows it.
    private func keepPartial(_ head: ByteBuffer, context: ChannelHandlerContext) {
        let pending = head.readableBytes - (head.readableBytesView.last == UInt8(ascii: "\r") ? 1 : 0)
        if pending > maxLength {
            fail(context: context)
        } else {
            partial = head
        }
    }

    private func emit(_ line: ByteBuffer, context: ChannelHandlerContext) {
        var line = line
        if line.readableBytesView.last == UInt8(ascii: "\r") { line.moveWriterIndex(to: line.writerIndex - 1) }
        if line.readableBytes > maxLength {
            fail(context: context)
        } else if !Self.isBlank(line) {
            context.fireChannelRead(wrapInboundOut(.line(line)))
        }
    }

    private func fail(context: ChannelHandlerContext) {
        failed = true
        partial = nil
        context.fireChannelRead(wrapInboundOut(.tooLarge))
    }

    static func isBlank(_ line: ByteBuffer) -> Bool {
        line.readableBytesView.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
    }
}
