import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import NIOCore
import NIOWebSocket

/// What leaves a Firebase WebSocket: the session's messages cut into frames, and the bounds on
/// what the peer leaves unread.
extension FirebaseSocketHandler {
    /// Writes one message, cut into frames when it is long (`FirebaseFrameAssembler.split`).
    func send(_ message: [UInt8]) {
        guard let context, !closing else { return }
        if message.count <= FirebaseFrameAssembler.maxFrameBytes {
            var data = frameBuffer(capacity: message.count, context: context)
            data.writeBytes(message)
            write(data, context: context)
        } else {
            for piece in FirebaseFrameAssembler.split(message) {
                var data = frameBuffer(capacity: piece.count, context: context)
                data.writeBytes(piece)
                write(data, context: context)
            }
        }
    }

    /// Writes a push: the listen's prefix and the body its view's listeners share.
    func send(prefix: [UInt8], body: ByteBuffer) {
        guard let context, !closing else { return }
        let size = prefix.count + body.readableBytes
        guard size <= FirebaseFrameAssembler.maxFrameBytes else {
            send(prefix + Array(body.readableBytesView))
            return
        }
        var data = frameBuffer(capacity: size, context: context)
        data.writeBytes(prefix)
        data.writeImmutableBuffer(body)
        write(data, context: context)
    }

    /// A buffer for a frame's payload with room in front for the frame's header, which the frame
    /// encoder then writes there rather than in a buffer of its own.
    private func frameBuffer(capacity: Int, context: ChannelHandlerContext) -> ByteBuffer {
        var buffer = context.channel.allocator.buffer(capacity: capacity + Self.headerRoom)
        buffer.moveWriterIndex(forwardBy: Self.headerRoom)
        buffer.moveReaderIndex(forwardBy: Self.headerRoom)
        return buffer
    }

    /// The longest header of a server frame.
    static let headerRoom = 10

    private func write(_ data: ByteBuffer, context: ChannelHandlerContext) {
        let size = data.readableBytes
        stallWatch.handed(size)
        if size > OutputBound.largeOutput {
            outputBound.noteOutput(size, queuedBefore: context.unsentBytes)
        }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: data)), promise: nil)
        wroteSinceFlush = true
        lastActivity = .now()
    }

    /// Flushes what was written, then holds the connection to its bounds.
    func flush() {
        guard let context, wroteSinceFlush, !closing else { return }
        wroteSinceFlush = false
        context.flush()
        checkOutputBound(context: context)
    }

    /// A reader too slow to keep its unsent output under `maxOutboundBytes`, or one holding much
    /// while the server's buffers are spent, is closed as a slow consumer.
    func checkOutputBound(context: ChannelHandlerContext) {
        guard !closing else { return }
        let unsent = context.unsentBytes
        if unsent > BufferBudget.smallHolding || charge.bytes > 0 { charge.update(unsent, in: security.buffers) }
        let verdict = outputBound.verdict(
            pending: unsent, limit: configuration.maxOutboundBytes, stalled: !context.channel.isWritable,
            budget: security.buffers)
        guard verdict != .within else { return }
        logger.warning(
            "closing a slow consumer", metadata: ["pendingBytes": "\(unsent)", "reason": "\(verdict.setting)"])
        charge.update(0, in: security.buffers)
        closeSocket(
            code: .policyViolation, reason: "slow consumer: the unsent output exceeded \(verdict.setting)",
            context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            performStall(stallWatch.outputFlowing(), context: context)
            outputBound.endAllowance()
            if charge.bytes > 0 { charge.update(context.unsentBytes, in: security.buffers) }
            pendingShrank()
        } else if !closing {
            performStall(stallWatch.outputBlocked(stillBuffered: context.unsentBytes), context: context)
            checkOutputBound(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func stallCheckDue() {
        guard let context, !closing else { return }
        let waits = !context.channel.isWritable
        let action = stallWatch.timerFired(stillBuffered: waits ? context.unsentBytes : nil)
        if waits { checkOutputBound(context: context) }
        guard !closing else { return }
        performStall(action, context: context)
    }

    func closeStalled(context: ChannelHandlerContext) {
        limitHit(
            "closing a connection whose peer stopped reading",
            metadata: ["timeoutSeconds": "\(security.limits.writeStallTimeoutSeconds)"])
        closing = true
        charge.update(0, in: security.buffers)
        context.close(promise: nil)
    }
}
