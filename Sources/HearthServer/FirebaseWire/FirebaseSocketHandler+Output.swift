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
        for piece in FirebaseFrameAssembler.split(message) {
            let data = context.channel.allocator.buffer(bytes: piece)
            stallWatch.handed(piece.count)
            outputBound.noteOutput(piece.count, queuedBefore: context.unsentBytes)
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: data)), promise: nil)
        }
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
