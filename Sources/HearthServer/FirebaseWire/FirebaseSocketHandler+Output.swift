import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import NIOCore
import NIOWebSocket

/// What leaves a Firebase connection: the engine's answers and pushes as the protocol's messages,
/// cut into frames, and the bounds on what the peer leaves unread.
extension FirebaseSocketHandler {
    /// The engine's output for this connection, in order, on its event loop.
    func receive(_ outputs: [Outbound]) {
        guard let context, !closing else { return }
        for output in outputs {
            switch output {
            case .event(let sub, let body):
                if let listen = listens[sub] {
                    push(prefix: listen.prefix, body: body, context: context)
                } else if case .listen(_, let key, let query)? = pending.first {
                    // The first data of the listen being answered.
                    let listen = register(sub: sub, key: key, query: query)
                    push(prefix: listen.prefix, body: body, context: context)
                }
            case .response(_, let body):
                answer(body, context: context)
            case .cancelled(let sub, _):
                guard let listen = listens[sub] else { continue }
                forget(sub: sub)
                send(FirebaseOutbound.listenRevoked(path: listen.key.path, query: listen.query), context: context)
            case .authRevoked(let reason):
                signedIn = false
                send(FirebaseOutbound.authRevoked(reason), context: context)
            case .close:
                closeSocket(code: .goingAway, context: context)
            case .line, .computed:
                break  // replication output: never for this transport
            }
            if closing { return }
        }
        flush(context: context)
        resumeReadingIfNeeded(context: context)
    }

    @discardableResult
    func register(sub: Int, key: FirebaseListenKey, query: JSONValue?) -> Listen {
        let listen = Listen(key: key, query: query, prefix: FirebaseOutbound.pushPrefix(tag: key.tag))
        listens[sub] = listen
        subscriptionOf[key] = sub
        return listen
    }

    /// The engine's answer to the request at the front of `pending`.
    func answer(_ body: ResponseBody, context: ChannelHandlerContext) {
        guard let entry = pending.popFirst() else {
            logger.error("an answer without a waiting request; closing the connection")
            context.close(promise: nil)
            return
        }
        if case .failure(let error) = body {
            switch entry {
            case .listen(let number, _, _), .write(let number, _), .get(let number), .auth(let number),
                .signOut(let number), .plain(let number):
                send(FirebaseOutbound.failure(number, error), context: context)
            case .silent:
                break
            }
            return
        }
        switch entry {
        case .listen(let number, let key, let query):
            guard case .subscribed(let sub, _, let warning, _, _) = body else { return }
            if listens[sub] == nil { register(sub: sub, key: key, query: query) }
            if unlistenedEarly.remove(key) != nil, let engine, let link = sessionLink {
                forget(sub: sub)
                submit(.unsubscribe(sub: sub), pending: .silent, engine: engine, link: link)
            }
            send(
                FirebaseOutbound.response(number) {
                    JSONWriter.writeLiteral(warning == nil ? "{}" : #"{"w":["no_index"]}"#, into: &$0)
                }, context: context)
        case .write(let number, let path):
            if case .stale(let current) = body {
                // The client retries the transaction on what it holds: the current value first.
                send(FirebaseOutbound.put(current, at: path), context: context)
                send(
                    FirebaseOutbound.response(number, status: "datastale") {
                        JSONWriter.writeString("the data changed since the transaction read it", into: &$0)
                    }, context: context)
            } else {
                send(FirebaseOutbound.ok(number), context: context)
            }
        case .get(let number):
            send(
                FirebaseOutbound.response(number) { bytes in
                    switch body {
                    case .value(let node, _, _): node.writeJSON(into: &bytes, format: .export)
                    case .window(let result, _, _, _): result.writeJSON(into: &bytes, format: .export)
                    default: JSONWriter.writeLiteral("null", into: &bytes)
                    }
                }, context: context)
        case .auth(let number):
            send(
                FirebaseOutbound.response(number) { bytes in
                    guard case .authenticated(let identity?, _) = body, !identity.isAdmin else {
                        JSONWriter.writeLiteral(#"{"auth":null,"admin":true}"#, into: &bytes)
                        return
                    }
                    JSONWriter.writeLiteral(#"{"auth":"#, into: &bytes)
                    identity.claims.serialize(into: &bytes)
                    JSONWriter.writeLiteral(#","expires":"#, into: &bytes)
                    if let expiry = identity.expiresAt {
                        JSONWriter.writeInt(expiry, into: &bytes)
                    } else {
                        JSONWriter.writeLiteral("null", into: &bytes)
                    }
                    bytes.append(UInt8(ascii: "}"))
                }, context: context)
        case .signOut(let number):
            send(
                FirebaseOutbound.response(number) { JSONWriter.writeString("unauthenticated", into: &$0) },
                context: context)
        case .plain(let number):
            send(FirebaseOutbound.ok(number), context: context)
        case .silent:
            break
        }
    }

    /// An answer the connection gives itself, at once.
    func answerNow(_ bytes: [UInt8], context: ChannelHandlerContext) {
        send(bytes, context: context)
    }

    /// A push: the listen's prefix, then the body shared by every listener of the view.
    func push(prefix: [UInt8], body: ByteBuffer, context: ChannelHandlerContext) {
        var message = prefix
        message.reserveCapacity(prefix.count + body.readableBytes)
        message.append(contentsOf: body.readableBytesView)
        send(message, context: context)
    }

    /// Writes one message, cut into frames when it is long (`FirebaseFrameAssembler.split`).
    func send(_ message: [UInt8], context: ChannelHandlerContext) {
        guard !closing else { return }
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
    func flush(context: ChannelHandlerContext) {
        guard wroteSinceFlush, !closing else { return }
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
            resumeReadingIfNeeded(context: context)
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
