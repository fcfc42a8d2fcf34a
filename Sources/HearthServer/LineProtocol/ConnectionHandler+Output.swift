import HearthCore
import HearthEngine
import HearthProtocol
import NIOCore

/// What leaves a line-protocol connection: the engine's answers and events in order, through one
/// outbox per event-loop turn, held back while the peer does not take them, and the bounds that
/// close a slow consumer or a stalled peer.
extension ConnectionHandler {
    // MARK: Outbound

    /// A line the server sends unasked (a `cluster` event), not to peers. Own event loop.
    func sendServerLine(_ line: [UInt8]) {
        guard let context, !closing, !isPeer else { return }
        send(line, context: context)
        flushOutbox(context: context)
    }

    /// Output from the engine, on this connection's event loop.
    func receive(_ outputs: [Outbound]) {
        guard let context, !closing else { return }
        for output in outputs {
            if !deferred.isEmpty || outbox.readableBytes > Self.pauseBytes || !waiting.isEmpty {
                // The peer has not taken what was sent: this waits, behind what already does.
                if case .event(_, let body) = output { deferredBytes += body.readableBytes }
                deferred.append(output)
                continue
            }
            // An event, by far the most frequent output, goes straight into the outbox.
            if case .event(let sub, let body) = output {
                let before = outbox.readableBytes
                queueEvent(sub: sub, body: body)
                if body.readableBytes > Self.pauseBytes {
                    noteLargeOutput(outbox.readableBytes - before, after: before)
                }
                continue
            }
            if deliver(output, context: context) { return }
        }
        afterDelivery(context: context)
    }

    /// One answer or event of `added` bytes, queued when `before` bytes waited in the outbox: when
    /// it is large and little else waited, it may pass `maxOutboundBytes` by its own size
    /// (`OutputBound.allowance`).
    func noteLargeOutput(_ added: Int, after before: Int) {
        outputBound.noteOutput(added, queuedBefore: before + waitingBytes)
    }

    /// Writes what the engine's output added, and resumes what waited for it.
    func afterDelivery(context: ChannelHandlerContext) {
        checkOutboxBound(context: context)
        flushOutbox(context: context)
        // A flush the socket took whole leaves the channel writable, and no change of
        // writability will come to hand on what waits in `deferred`: it goes on now.
        while !closing, !deferred.isEmpty, waiting.isEmpty, budgetRetry == nil, context.channel.isWritable {
            if moveDeferred(context: context) { return }
            checkOutboxBound(context: context)
            flushOutbox(context: context)
        }
        resumeReadingIfNeeded(context: context)
        if closeWhenIdle, slots.isEmpty { closeOnceDrained(context: context) }
    }

    /// Once this much waits to be sent, the engine's further output waits in `deferred`: the size
    /// of one large output (`OutputBound.largeOutput`).
    static let pauseBytes = OutputBound.largeOutput

    /// Queues one output of the engine; true when it closed the connection.
    func deliver(_ output: Outbound, context: ChannelHandlerContext) -> Bool {
        let before = outbox.readableBytes
        switch output {
        case .event(let sub, let body):
            queueEvent(sub: sub, body: body)
        case .cancelled(let sub, let error):
            queue(ResponseEncoder.cancelEvent(sub: sub, error))
        case .authRevoked(let reason):
            queue(ResponseEncoder.authRevoked(reason: reason))
        case .response(let id, let body):
            scratch.removeAll(keepingCapacity: true)
            ResponseEncoder.encode(id: id, body, into: &scratch)
            fillFrontSlot(scratch, context: context)
            // A large answer's room is not kept for the connection's life.
            if scratch.capacity > Self.pauseBytes { scratch = [] }
        case .line(let line):
            queue(line)
        case .computed(let lines):
            // A snapshot's lines, each large: the bound is checked after each one.
            for line in lines() {
                send(line, context: context)
                if closing { break }
            }
        case .close:
            flushOutbox(context: context)
            closeOnceDrained(context: context)
            return true
        }
        noteLargeOutput(outbox.readableBytes - before, after: before)
        return false
    }

    /// Hands `deferred` output on while the peer keeps up, and the server's buffers have room
    /// for answers (else tries again shortly).
    func drainDeferred(context: ChannelHandlerContext) {
        if moveDeferred(context: context) { return }
        afterDelivery(context: context)
    }

    /// Moves `deferred` output into the outbox until it holds `pauseBytes`, or an answer must wait
    /// for room in the server's buffers (then tried again shortly); true when it closed the
    /// connection.
    func moveDeferred(context: ChannelHandlerContext) -> Bool {
        while !closing, waiting.isEmpty, outbox.readableBytes <= Self.pauseBytes, let next = deferred.first {
            if case .response = next, security.buffers.isSpent {
                scheduleBudgetRetry(context: context)
                break
            }
            deferred.removeFirst()
            if case .event(_, let body) = next { deferredBytes -= body.readableBytes }
            if deliver(next, context: context) { return true }
        }
        return false
    }

    func scheduleBudgetRetry(context: ChannelHandlerContext) {
        guard budgetRetry == nil else { return }
        budgetRetry = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(50)) { [self] in
            budgetRetry = nil
            guard let context = self.context else { return }
            drainDeferred(context: context)
        }
    }

    func enqueueReady(_ bytes: [UInt8], context: ChannelHandlerContext) {
        if slots.isEmpty {
            send(bytes, context: context)
        } else {
            slots.append(.ready(bytes))
        }
    }

    func fillFrontSlot(_ bytes: [UInt8], context: ChannelHandlerContext) {
        // The engine answers in request order, and ready slots are flushed eagerly, so the
        // front slot is the one waiting for this response.
        guard case .awaitingEngine? = slots.first else {
            logger.error("response without a waiting request; closing the connection")
            context.close(promise: nil)
            return
        }
        slots.removeFirst()
        waitingForEngine -= 1
        queue(bytes)  // the delivery (`receive`) checks the outbox's bound once it is done
        while case .ready(let next)? = slots.first {
            slots.removeFirst()
            queue(next)
        }
    }

    /// Queues bytes in the outbox, and checks its bound (`checkOutboxBound`).
    func send(_ bytes: [UInt8], context: ChannelHandlerContext) {
        queue(bytes)
        checkOutboxBound(context: context)
    }

    /// Queues bytes in the outbox; `flushOutbox` writes them. The caller checks the outbox's
    /// bound once it has queued what it had (an engine delivery checks once, not per answer:
    /// the check costs about as much as the copy).
    func queue(_ bytes: [UInt8]) {
        guard !closing else { return }
        outbox.writeBytes(bytes)
    }

    /// An event: the subscriber's prefix `{"sub":S,` and the body all its subscribers share,
    /// written straight into the outbox (its bound checked by the caller, as for `queue`).
    func queueEvent(sub: Int, body: ByteBuffer) {
        guard !closing else { return }
        Self.writeEvent(sub: sub, body: body, into: &outbox)  // one access to the outbox
    }

    static func writeEvent(sub: Int, body: ByteBuffer, into outbox: inout ByteBuffer) {
        // The prefix is put together on the stack and written with one copy, then the body.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { prefix in
            var count = 0
            for byte in #"{"sub":"#.utf8 {
                prefix[count] = byte
                count += 1
            }
            count += writeDecimal(sub, into: UnsafeMutableBufferPointer(rebasing: prefix[count...]))
            prefix[count] = UInt8(ascii: ",")
            outbox.writeBytes(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: prefix[...count])))
        }
        outbox.writeImmutableBuffer(body)
    }

    /// A reader too slow to keep its unsent output under `maxOutboundBytes` is told
    /// `slow_consumer` and disconnected. The output still waiting here is dropped, so the event
    /// follows only the lines already handed to the channel (whole lines); the output side is
    /// shut once it is written, and the connection closed when the client closes its side or
    /// after `slowConsumerGrace`, whichever comes first.
    func checkOutboxBound(context: ChannelHandlerContext) {
        guard !closing else { return }
        // A peer replica receiving a snapshot may hold more, and is not let go for the server's
        // budget: its stream is cut by the engine rather than here.
        let limit = configuration.maxOutboundBytes * (isPeer ? 16 : 1)
        let writable = context.channel.isWritable
        let queued = waitingBytes + outbox.readableBytes + deferredBytes
        let pending =
            queued
            + channelBufferedBytes(context, writable: writable, mattersAbove: limit + outputBound.allowance - queued)
        if pending > BufferBudget.smallHolding || outputCharge.bytes > 0 {
            outputCharge.update(pending, in: security.buffers)
        }
        let verdict = outputBound.verdict(
            pending: pending, limit: limit, stalled: !isPeer && (!waiting.isEmpty || !writable),
            budget: security.buffers)
        guard verdict != .within else { return }
        closing = true
        outbox.clear()
        waiting.removeAll()
        waitingBytes = 0
        deferred.removeAll()
        deferredBytes = 0
        outputCharge.update(0, in: security.buffers)
        logger.warning(
            "closing a slow consumer",
            metadata: [
                "pendingBytes": "\(pending)", "reason": "\(verdict.setting)",
            ])
        let error =
            verdict == .overBudget
            ? DatabaseError(
                .slowConsumer,
                "the connection did not read its output while the server's buffers were full (maxBufferedBytes)")
            : DatabaseError(
                .slowConsumer, "the connection's unsent output exceeded \(configuration.maxOutboundBytes) bytes")
        let line = ResponseEncoder.errorEvent(error)
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { result in
            if case .success = result {
                context.close(mode: .output, promise: nil)
            } else {
                context.close(promise: nil)
            }
        }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: line)), promise: written)
        slowConsumerClose = context.eventLoop.assumeIsolated().scheduleTask(in: Self.slowConsumerGrace) {
            context.close(promise: nil)
        }
        context.read()
    }

    /// How long a slow consumer has to read what was sent, the `slow_consumer` event last.
    static let slowConsumerGrace: TimeAmount = .seconds(10)

    /// Writes what the outbox holds with one write, and flushes; when the channel is not
    /// writable, the outbox waits for it in `waiting`.
    func flushOutbox(context: ChannelHandlerContext) {
        guard !closing, outbox.readableBytes > 0 else { return }
        let count = outbox.readableBytes
        var buffer = outbox
        outbox = spareOutbox.take() ?? context.channel.allocator.buffer(capacity: Swift.min(count, 64 * 1024))
        if waiting.isEmpty, context.channel.isWritable {
            stallWatch.handed(count)
            // One trip down the pipeline for both (`write` then `flush` made two).
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            // Written whole, the bytes are no longer the channel's: clearing allocates nothing. A
            // large buffer is let go, so that an idle connection keeps little.
            if buffer.capacity <= Self.spareOutboxCapacity {
                buffer.clear()
                spareOutbox = buffer
            }
        } else {
            waiting.append(buffer)
            waitingBytes += count
        }
    }

    /// The largest outbox buffer kept as the spare.
    static let spareOutboxCapacity = 4096

    func write(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        stallWatch.handed(buffer.readableBytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    /// The bytes the channel holds that have not reached the socket, when they may exceed
    /// `threshold`. A `writable` channel holds less than its high water mark (64 KiB), so the
    /// exact count, a slower query, is read only when the channel is not writable or the threshold
    /// is below that mark; otherwise 0 stands for "not above the threshold".
    func channelBufferedBytes(_ context: ChannelHandlerContext, writable: Bool, mattersAbove threshold: Int) -> Int {
        let highWaterMark = 64 * 1024
        if writable, threshold >= highWaterMark { return 0 }
        return context.unsentBytes
    }

    /// Closes once every byte written so far has reached the socket: the promise of an empty
    /// write completes after the writes before it.
    func closeAfterWritten(context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: written)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !closing {
            if !waiting.isEmpty {
                while context.channel.isWritable, let next = waiting.popFirst() {
                    waitingBytes -= next.readableBytes
                    write(next, context: context)
                }
                context.flush()
                if closeWhenDrained, waiting.isEmpty {
                    closeWhenDrained = false
                    closeAfterWritten(context: context)
                }
            }
            if waiting.isEmpty {
                performStall(stallWatch.outputFlowing(), context: context)
                if deferred.isEmpty { outputBound.endAllowance() }
                drainDeferred(context: context)
            }
        } else if !closing, slowConsumerClose == nil {
            performStall(stallWatch.outputBlocked(stillBuffered: context.unsentBytes), context: context)
            checkOutboxBound(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// The stall check (`StallWatch`): while output waits (the channel is not writable, or
    /// outboxes wait for it), a connection over its bounds closes as a slow consumer, and one
    /// whose peer took nothing since the last check as a stalled one.
    func stallCheckDue() {
        guard let context else { return }
        let waits = !closing && (!context.channel.isWritable || !waiting.isEmpty)
        let action = stallWatch.timerFired(stillBuffered: waits ? context.unsentBytes : nil)
        if waits { checkOutboxBound(context: context) }
        guard !closing else { return }
        performStall(action, context: context)
    }

    func closeStalled(context: ChannelHandlerContext) {
        limitHit(
            "closing a connection whose peer stopped reading",
            metadata: [
                "pendingBytes": "\(waitingBytes + deferredBytes)",
                "timeoutSeconds": "\(security.limits.writeStallTimeoutSeconds)",
            ])
        closing = true
        outputCharge.update(0, in: security.buffers)
        context.close(promise: nil)
    }
}
