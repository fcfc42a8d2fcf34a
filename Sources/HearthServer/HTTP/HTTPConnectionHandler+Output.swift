import HearthCore
import HearthEngine
import HearthProtocol
import NIOCore
import NIOHTTP1

/// What leaves the connection: answers and their common headers, event streams, and the timers
/// that close a connection that is idle or whose peer does not take its output.
extension HTTPConnectionHandler {
    // MARK: Answers

    /// Writes the answer to the current request and gets ready for the next one.
    func finish(
        _ response: RESTResponse, head: HTTPRequestHead, call: RESTCall?, context: ChannelHandlerContext
    ) {
        var response = response
        if let call { RESTRender.finish(&response, call: call) }
        let keepAlive = head.isKeepAlive && !closeAfterAnswer
        state = keepAlive ? .idle : .closed
        write(
            response, for: head, isHead: call?.isHead ?? (head.method == .HEAD), keepAlive: keepAlive,
            closeWhenWritten: true, context: context)
        if keepAlive {
            armIdleTimer(context: context, timeout: .seconds(Int64(security.limits.idleTimeoutSeconds)))
            // The next request waits until the peer has taken this answer (`channelWritabilityChanged`).
            if !context.channel.isWritable { blockedOnOutput = true }
            processQueued(context: context)
        }
    }

    func write(
        _ response: RESTResponse, for head: HTTPRequestHead, isHead: Bool, keepAlive: Bool,
        closeWhenWritten: Bool, context: ChannelHandlerContext
    ) {
        var buffer = context.channel.allocator.buffer(capacity: 320 + response.body.count)
        Self.writeStatusLine(response.status, version: head.version, allowOrigin: allowOrigin, into: &buffer)
        if let contentType = response.contentType { Self.writeHeader("Content-Type", contentType, into: &buffer) }
        for (name, value) in response.headers { Self.writeHeader(name, value, into: &buffer) }
        if response.status != .notModified, response.status != .noContent {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(response.body.count))
            buffer.writeStaticString("\r\n")
        }
        if !keepAlive { buffer.writeStaticString("Connection: close\r\n") }
        buffer.writeStaticString("\r\n")
        if !isHead { buffer.writeBytes(response.body) }
        stallWatch.handed(buffer.readableBytes)
        guard !keepAlive, closeWhenWritten else {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// The status line and the headers every answer carries (docs/REST.md, "Output").
    static func writeStatusLine(
        _ status: HTTPResponseStatus, version: HTTPVersion, allowOrigin: String, into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString(version.major == 1 && version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(status.reasonPhrase)
        if allowOrigin == "*" {
            buffer.writeStaticString(
                "\r\nCache-Control: no-cache\r\nAccess-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: ETag, X-Hearth-Rev, X-Hearth-Warning\r\n"
            )
        } else {
            // An open server names the one origin it allows (none for a refused one), and says
            // that the answer depends on it.
            buffer.writeStaticString("\r\nCache-Control: no-cache\r\nVary: Origin\r\n")
            if !allowOrigin.isEmpty { writeHeader("Access-Control-Allow-Origin", allowOrigin, into: &buffer) }
            buffer.writeStaticString("Access-Control-Expose-Headers: ETag, X-Hearth-Rev, X-Hearth-Warning\r\n")
        }
    }

    /// One header line; a name or value with a line break or another control character (which
    /// could only come from a bug, the values being built or checked here) is left out rather
    /// than let split the response.
    static func writeHeader(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        func isSafe(_ text: String) -> Bool { text.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F } }
        guard isSafe(name), isSafe(value) else { return }
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }

    // MARK: Streams

    func startStream(
        sub: Int, rev: UInt64, warning: String?, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        // HTTP/1.1 streams are chunked; HTTP/1.0 ones end when the connection closes.
        chunked = !(head.version.major == 1 && head.version.minor == 0)
        var buffer = context.channel.allocator.buffer(capacity: 320)
        Self.writeStatusLine(.ok, version: head.version, allowOrigin: allowOrigin, into: &buffer)
        buffer.writeStaticString("Content-Type: text/event-stream; charset=utf-8\r\nX-Hearth-Rev: ")
        buffer.writeString(String(rev))
        buffer.writeStaticString("\r\n")
        if let warning { Self.writeHeader("X-Hearth-Warning", RESTRender.asciiEscaped(warning), into: &buffer) }
        buffer.writeStaticString(chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Connection: close\r\n\r\n")
        state = .streaming(Stream(head: head, sub: sub))
        engine.metrics.streamOpened()
        streamCounted = true
        stallWatch.handed(buffer.readableBytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
        lastStreamWrite = .now()
        armKeepAlive(context: context)
        if closeAfterAnswer { endStream(with: nil, context: context) }
    }

    func writeStreamBytes(_ bytes: inout ByteBuffer, context: ChannelHandlerContext) {
        let count = bytes.readableBytes
        // A reader too slow to keep its unsent output under the bound is cut (docs/REST.md,
        // "Streaming (Server-Sent Events)"), and so is one holding much while the server's buffers are spent. One
        // large event (a large first value) may pass the bound by its own size: a large event is
        // not a slow reader.
        outputBound.noteOutput(count, queuedBefore: outstandingBytes)
        let verdict = outputBound.verdict(
            pending: outstandingBytes + count, limit: configuration.maxOutboundBytes,
            stalled: !context.channel.isWritable, budget: security.buffers)
        if verdict != .within {
            logger.warning(
                "closing a slow event-stream reader",
                metadata: ["pendingBytes": "\(outstandingBytes)", "reason": "\(verdict.setting)"])
            closeNow(context: context)
            return
        }
        outstandingBytes += count
        if outstandingBytes > BufferBudget.smallHolding || charge.bytes > 0 {
            charge.update(outstandingBytes, in: security.buffers)
        }
        stallWatch.handed(count)
        lastStreamWrite = .now()
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [self] _ in
            outstandingBytes -= count
            if outstandingBytes <= OutputBound.largeOutput { outputBound.endAllowance() }
            if charge.bytes > 0 { charge.update(outstandingBytes, in: security.buffers) }
        }
        if chunked {
            var framed = context.channel.allocator.buffer(capacity: count + 12)
            framed.writeString(String(count, radix: 16))
            framed.writeStaticString("\r\n")
            framed.writeBuffer(&bytes)
            framed.writeStaticString("\r\n")
            context.write(wrapOutboundOut(framed), promise: promise)
        } else {
            context.write(wrapOutboundOut(bytes), promise: promise)
        }
    }

    /// Sends `last` (a `cancel` or `auth_revoked` event) if given, ends the stream with its last
    /// chunk, and closes the connection.
    func endStream(with last: [UInt8]?, context: ChannelHandlerContext) {
        guard case .streaming = state else { return }
        if var last = last.map({ context.channel.allocator.buffer(bytes: $0) }) {
            writeStreamBytes(&last, context: context)
        }
        state = .closed
        keepAliveTimer?.cancel()
        let last = context.channel.allocator.buffer(staticString: chunked ? "0\r\n\r\n" : "")
        stallWatch.handed(last.readableBytes)
        context.writeAndFlush(wrapOutboundOut(last)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// A `keep-alive` event after `sseKeepAliveSeconds` without any other.
    func armKeepAlive(context: ChannelHandlerContext) {
        let interval = TimeAmount.seconds(Int64(configuration.sseKeepAliveSeconds))
        keepAliveTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: lastStreamWrite + interval) {
            [self] in
            guard case .streaming = state, let context = self.context else { return }
            if NIODeadline.now() >= lastStreamWrite + interval {
                var keepAlive = context.channel.allocator.buffer(bytes: StreamEvents.keepAlive)
                writeStreamBytes(&keepAlive, context: context)
                context.flush()
            }
            armKeepAlive(context: context)
        }
    }

    /// Closes the connection once it has been idle (no request under way) for `timeout` since
    /// the last answer. One timer at a time, re-armed when it fires early rather than per request.
    func armIdleTimer(context: ChannelHandlerContext, timeout: TimeAmount) {
        idleTimeout = timeout
        lastActivity = .now()
        if idleTimer == nil { scheduleIdleCheck(context: context, at: lastActivity + timeout) }
    }

    func scheduleIdleCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleTimer = nil
            // A connection busy with a request (or a stream) is re-armed when it is next idle.
            guard case .idle = state, let context = self.context else { return }
            let due = lastActivity + idleTimeout
            if !context.channel.isWritable {
                // The last answer is still on its way: not idle (the stall timer watches it).
                scheduleIdleCheck(context: context, at: NIODeadline.now() + idleTimeout)
            } else if NIODeadline.now() >= due {
                state = .closed
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context: context, at: due)
            }
        }
    }

    // MARK: Output the peer does not take

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            performStall(stallWatch.outputFlowing(), context: context)
            if case .streaming = state {} else { charge.update(0, in: security.buffers) }
            if blockedOnOutput {
                blockedOnOutput = false
                processQueued(context: context)
            }
        } else {
            let buffered = context.unsentBytes
            if case .streaming = state {} else { charge.update(buffered, in: security.buffers) }
            if closeIfOverBudget(buffered: buffered, context: context) { return }
            performStall(stallWatch.outputBlocked(stillBuffered: buffered), context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// While the server's buffers are spent, a connection whose peer is not taking a sizeable
    /// output is the one to let go. True when it closed the connection.
    func closeIfOverBudget(buffered: Int, context: ChannelHandlerContext) -> Bool {
        guard OutputBound.isOverBudget(holding: buffered, stalled: true, budget: security.buffers) else { return false }
        security.counters.limitHits.add(1)
        logger.warning(
            "closing a connection that does not read while the server's buffers are full",
            metadata: ["pendingBytes": "\(buffered)", "peer": "\(remoteAddress)"])
        closeNow(context: context)
        return true
    }

    /// The stall check (`StallWatch`): while the channel is not writable, a connection over the
    /// server's budget is let go, and one whose peer took nothing since the last check closes.
    func stallCheckDue() {
        guard let context else { return }
        let waits = !context.channel.isWritable
        let buffered = waits ? context.unsentBytes : 0
        let action = stallWatch.timerFired(stillBuffered: waits ? buffered : nil)
        if waits, closeIfOverBudget(buffered: buffered, context: context) { return }
        performStall(action, context: context)
    }

    func closeStalled(context: ChannelHandlerContext) {
        security.limitHit(
            "closing a connection whose peer stopped reading", peer: remoteAddress,
            metadata: ["pendingBytes": "\(context.unsentBytes)"], logger: logger)
        closeNow(context: context)
    }

    /// Closes the connection at once, and lets go of its share of the server's buffers.
    func closeNow(context: ChannelHandlerContext) {
        state = .closed
        charge.update(0, in: security.buffers)
        context.close(promise: nil)
    }
}
