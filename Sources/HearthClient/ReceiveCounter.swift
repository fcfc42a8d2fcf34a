import NIOConcurrencyHelpers
import NIOCore

/// Counts the bytes that arrive on a connection, before they are framed into lines, and the
/// bytes of each write once the socket has taken them: a large answer (or request) shows
/// progress long before its line is complete (`Database.bytesReceived`, `bytesSent`).
final class ReceiveCounter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let received: NIOLockedValueBox<UInt64>
    private let sent: NIOLockedValueBox<UInt64>

    init(received: NIOLockedValueBox<UInt64>, sent: NIOLockedValueBox<UInt64>) {
        self.received = received
        self.sent = sent
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = UInt64(unwrapInboundIn(data).readableBytes)
        received.withLockedValue { $0 &+= count }
        context.fireChannelRead(data)
    }

    /// A write's promise completes once all of it is written: a large one is passed on in
    /// slices of `sliceBytes` (no copy), each counted when the socket has taken it.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = unwrapOutboundIn(data)
        while buffer.readableBytes > Self.sliceBytes, let slice = buffer.readSlice(length: Self.sliceBytes) {
            context.write(wrapOutboundOut(slice), promise: counting(slice.readableBytes, context, nil))
        }
        context.write(wrapOutboundOut(buffer), promise: counting(buffer.readableBytes, context, promise))
    }

    static let sliceBytes = 64 * 1024

    /// `promise` (or a new one) that adds `count` to the bytes sent when it succeeds.
    private func counting(
        _ count: Int, _ context: ChannelHandlerContext, _ promise: EventLoopPromise<Void>?
    ) -> EventLoopPromise<Void> {
        let written = promise ?? context.eventLoop.makePromise()
        let sent = self.sent
        written.futureResult.whenSuccess { sent.withLockedValue { $0 &+= UInt64(count) } }
        return written
    }
}
