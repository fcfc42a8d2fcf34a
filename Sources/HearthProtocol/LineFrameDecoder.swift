public import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One inbound frame of the line protocol.
public enum LineFrame: Sendable {
    /// A non-blank line without its `\n` (and without a `\r` before it).
    case line(ByteBuffer)
    /// A line longer than the limit: the connection must be answered `too_large` and closed.
    case tooLarge
}

/// Splits a byte stream into lines of at most `maxLength` bytes, as the reads arrive. Blank lines
/// are dropped; an unterminated line at end of stream (a client that vanished mid-line) is
/// discarded. After a too-long line, everything else is discarded.
///
/// Whole lines are handed on as slices of the buffer they arrived in; only a line split across
/// reads is gathered into a buffer of its own. (NIO's generic `ByteToMessageHandler` costs
/// several thousand instructions per line; this costs a byte search.) A value, so that a
/// handler may frame its own input (the server's connections do, which saves a pipeline hop per
/// line) or use `LineFrameDecoder`.
public struct LineFramer: Sendable {
    public let maxLength: Int
    /// The start of a line whose end has not arrived yet.
    private var partial: ByteBuffer?
    /// A line was too long: nothing more is framed.
    public private(set) var failed = false

    public init(maxLength: Int) { self.maxLength = maxLength }

    /// Hands `body` each frame that `buffer`, the next bytes of the stream, completes, in order,
    /// and keeps an unterminated tail for the next read.
    public mutating func frames(in buffer: ByteBuffer, _ body: (LineFrame) -> Void) {
        guard !failed else { return }
        var buffer = buffer
        // Taken out of `partial` first, so that appending to it copies nothing (a line split
        // across many reads is gathered in one growing buffer, not copied at every read).
        if var head = partial.take() {
            guard let length = Self.lineLength(in: buffer) else {
                head.writeBuffer(&buffer)
                keepPartial(head, body)
                return
            }
            // readSlice cannot fail: the line and its `\n` are readable.
            guard var rest = buffer.readSlice(length: length) else { return }
            buffer.moveReaderIndex(forwardBy: 1)
            head.writeBuffer(&rest)
            emit(head, body)
        }
        while !failed, let length = Self.lineLength(in: buffer), let line = buffer.readSlice(length: length) {
            buffer.moveReaderIndex(forwardBy: 1)
            emit(line, body)
        }
        if !failed, buffer.readableBytes > 0 { keepPartial(buffer, body) }
    }

    /// The bytes before the first `\n` of `buffer`, or nil when it holds none. (`memchr` looks at
    /// many bytes per instruction; a loop over the bytes costs several instructions each.)
    private static func lineLength(in buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, let found = memchr(base, Int32(UInt8(ascii: "\n")), bytes.count) else {
                return nil
            }
            return UnsafeRawPointer(found) - base
        }
    }

    /// Whether the last readable byte of `buffer` is a `\r`.
    private static func endsWithCarriageReturn(_ buffer: ByteBuffer) -> Bool {
        buffer.readableBytes > 0 && buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r")
    }

    /// Keeps an unterminated line, unless it is already too long. A `\r` at its end may be the
    /// first half of a `\r\n` split across reads: it counts only once a byte other than `\n`
    /// follows it.
    private mutating func keepPartial(_ head: ByteBuffer, _ body: (LineFrame) -> Void) {
        let pending = head.readableBytes - (Self.endsWithCarriageReturn(head) ? 1 : 0)
        if pending > maxLength {
            fail(body)
        } else {
            partial = head
        }
    }

    private mutating func emit(_ line: ByteBuffer, _ body: (LineFrame) -> Void) {
        var line = line
        if Self.endsWithCarriageReturn(line) { line.moveWriterIndex(to: line.writerIndex - 1) }
        if line.readableBytes > maxLength {
            fail(body)
        } else if !Self.isBlank(line) {
            body(.line(line))
        }
    }

    private mutating func fail(_ body: (LineFrame) -> Void) {
        failed = true
        partial = nil
        body(.tooLarge)
    }

    static func isBlank(_ line: ByteBuffer) -> Bool {
        line.readableBytesView.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
    }
}

/// A channel handler that frames its input with a `LineFramer` and passes each `LineFrame` on.
public final class LineFrameDecoder: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = LineFrame

    /// Unchecked for exclusivity (a dynamic check per read otherwise): only the channel's event
    /// loop touches it.
    @exclusivity(unchecked) private var framer: LineFramer

    public init(maxLength: Int) { framer = LineFramer(maxLength: maxLength) }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        framer.frames(in: unwrapInboundIn(data)) { frame in context.fireChannelRead(wrapInboundOut(frame)) }
    }
}
