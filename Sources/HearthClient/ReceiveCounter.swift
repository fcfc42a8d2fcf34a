import NIOConcurrencyHelpers
import NIOCore

/// Counts the bytes that arrive on a connection, before they are framed into lines: a large
/// answer shows progress long before its line is complete (`Database.bytesReceived`).
final class ReceiveCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let total: NIOLockedValueBox<UInt64>

    init(total: NIOLockedValueBox<UInt64>) { self.total = total }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = UInt64(unwrapInboundIn(data).readableBytes)
        total.withLockedValue { $0 &+= count }
        context.fireChannelRead(data)
    }
}
