import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import NIOCore
import NIOWebSocket

/// What leaves a Firebase WebSocket: the session's messages cut into frames, and the bounds on
/// what the peer leaves unread.
extension FirebaseSocketHandler {
    /// Queues one message in the outbox, cut into frames when it is long
    /// (`FirebaseFrameAssembler.split`).
    func send(_ message: [UInt8]) {
        guard !closing else { return }
        if message.count <= FirebaseFrameAssembler.maxFrameBytes {
            WebSocketFrameWriter.writeHeader(.text, length: message.count, into: &outbox)
            outbox.writeBytes(message)
        } else {
            for piece in FirebaseFrameAssembler.split(message) {
                WebSocketFrameWriter.writeHeader(.text, length: piece.count, into: &outbox)
                outbox.writeBytes(piece)
            }
        }
        noteQueued()
    }

    /// Queues a push: the listen's prefix and the body its view's listeners share.
    func send(prefix: [UInt8], body: ByteBuffer) {
        guard !closing else { return }
        let size = prefix.count + body.readableBytes
        guard size <= FirebaseFrameAssembler.maxFrameBytes else {
            send(prefix + Array(body.readableBytesView))
            return
        }
        outbox.reserveCapacity(minimumWritableBytes: size + WebSocketFrameWriter.maxHeaderBytes)
        WebSocketFrameWriter.writeHeader(.text, length: size, into: &outbox)
        outbox.writeBytes(prefix)
        outbox.writeImmutableBuffer(body)
        noteQueued()
    }

    /// Queues a control frame (a pong, a close).
    func sendControl(_ opcode: WebSocketOpcode, payload: ByteBuffer) {
        WebSocketFrameWriter.writeHeader(opcode, length: payload.readableBytes, into: &outbox)
        outbox.writeImmutableBuffer(payload)
        noteQueued()
    }

    private func noteQueued() {
        wroteSinceFlush = true
        // A large outbox goes out at once, rather than growing with the rest of the turn.
        if outbox.readableBytes >= Self.outboxFlushBytes { writeOutbox() }
    }

    /// Outboxes this large are written without waiting for the end of the turn.
    static let outboxFlushBytes = 1 << 20

    /// Hands the outbox to the channel, with one write.
    func writeOutbox() {
        guard let context, outbox.readableBytes > 0 else { return }
        let size = outbox.readableBytes
        stallWatch.handed(size)
        if size > OutputBound.largeOutput {
            outputBound.noteOutput(size, queuedBefore: context.unsentBytes)
        }
        context.write(wrapOutboundOut(outbox), promise: nil)
        outbox = context.channel.allocator.buffer(capacity: Self.outboxCapacity)
    }

    /// The room a new outbox starts with.
    static let outboxCapacity = 1024

    /// Writes and flushes what was queued, then holds the connection to its bounds.
    func flush() {
        guard let context, wroteSinceFlush, !closing else { return }
        wroteSinceFlush = false
        lastActivity = .now()
        writeOutbox()
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
