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

/// One inbound frame of the line protocol, its line handed over as its bytes, which are valid
/// only during the call that hands them (`LineFramer.rawFrames`).
public enum RawLineFrame {
    /// A non-blank line without its `\n` (and without a `\r` before it).
    case line(UnsafeRawBufferPointer)
    /// A line longer than the limit: the connection must be answered `too_large` and closed.
    case tooLarge
}

/// Splits a byte stream into lines of at most `maxLength` bytes, as the reads arrive. Blank lines
/// are dropped; an unterminated line at end of stream (a client that vanished mid-line) is
/// discarded. After a too-long line, everything else is discarded.
///
/// Whole lines are handed on as slices of the buffer they arrived in; only a line split across
/// reads is gathered into a buffer of its own, so framing a line costs a byte search and no
/// copy. A value, so that a
/// handler may frame its own input (the server's connections do, which saves a pipeline hop per
/// line) or use `LineFrameDecoder`.
public struct LineFramer: Sendable {
    public let maxLength: Int
    /// The start of a line whose end has not arrived yet.
    private var partial: ByteBuffer?
    /// A line was too long: nothing more is framed.
    public private(set) var failed = false

    public init(maxLength: Int) { self.maxLength = maxLength }

    /// The bytes of a line whose end has not arrived yet.
    public var partialBytes: Int { partial?.readableBytes ?? 0 }

    /// Hands `body` each frame that `buffer`, the next bytes of the stream, completes, in order,
    /// and keeps an unterminated tail for the next read. Each line is a slice of the buffer it
    /// arrived in (or of the buffer a split line was gathered in).
    public mutating func frames(in buffer: ByteBuffer, _ body: (LineFrame) -> Void) {
        split(buffer) { frame, source, offset in
            switch frame {
            case .line(let bytes):
                body(.line(source.getSlice(at: source.readerIndex + offset, length: bytes.count) ?? ByteBuffer()))
            case .tooLarge:
                body(.tooLarge)
            }
        }
    }

    /// As `frames(in:_:)`, with each line handed over as its bytes, valid only during the call:
    /// the handler reads them without a `ByteBuffer` per line (reading a buffer's bytes costs a
    /// dynamic exclusivity check each time).
    public mutating func rawFrames(in buffer: ByteBuffer, _ body: (RawLineFrame) -> Void) {
        split(buffer) { frame, _, _ in body(frame) }
    }

    /// The framing of both: each frame, with the buffer its line is in and the line's offset in
    /// that buffer's readable bytes. The bytes of `buffer` are read once, whatever the number of
    /// lines in it.
    private mutating func split(_ buffer: ByteBuffer, _ body: (RawLineFrame, ByteBuffer, Int) -> Void) {
        guard !failed else { return }
        var buffer = buffer
        // Taken out of `partial` first, so that appending to it copies nothing (a line split
        // across many reads is gathered in one growing buffer, not copied at every read).
        if var head = partial.take() {
            guard let length = Self.lineLength(in: buffer) else {
                head.writeBuffer(&buffer)
                keepPartial(head) { body($0, head, 0) }
                return
            }
            // readSlice cannot fail: the line and its `\n` are readable.
            guard var rest = buffer.readSlice(length: length) else { return }
            buffer.moveReaderIndex(forwardBy: 1)
            head.writeBuffer(&rest)
            head.withUnsafeReadableBytes { line in emit(line) { body($0, head, 0) } }
        }
        guard !failed else { return }
        let source = buffer
        let consumed = source.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress else { return 0 }
            var start = 0
            while !failed, start < bytes.count,
                let found = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
            {
                let end = UnsafeRawPointer(found) - base
                emit(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) { [start] in body($0, source, start) }
                start = end + 1
            }
            return start
        }
        buffer.moveReaderIndex(forwardBy: consumed)
        if !failed, buffer.readableBytes > 0 { keepPartial(buffer) { body($0, buffer, 0) } }
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

    /// Keeps an unterminated line, unless it is already too long. A `\r` at its end may be the
    /// first half of a `\r\n` split across reads: it counts only once a byte other than `\n`
    /// follows it.
    private mutating func keepPartial(_ head: ByteBuffer, _ body: (RawLineFrame) -> Void) {
        let endsWithCarriageReturn =
            head.readableBytes > 0
            && head.getInteger(at: head.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r")
        let pending = head.readableBytes - (endsWithCarriageReturn ? 1 : 0)
        if pending > maxLength {
            fail(body)
        } else {
            partial = head
        }
    }

    /// Hands on a line (its bytes before the `\n`), without a `\r` at its end, unless it is
    /// blank; a line over `maxLength` ends the framing.
    private mutating func emit(_ line: UnsafeRawBufferPointer, _ body: (RawLineFrame) -> Void) {
        var line = line
        if line.last == UInt8(ascii: "\r") { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
        if line.count > maxLength {
            fail(body)
        } else if !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
            body(.line(line))
        }
    }

    private mutating func fail(_ body: (RawLineFrame) -> Void) {
        failed = true
        partial = nil
        body(.tooLarge)
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
