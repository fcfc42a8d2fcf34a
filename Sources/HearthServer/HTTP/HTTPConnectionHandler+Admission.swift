import HearthCore
import HearthProtocol
import NIOCore
import NIOHTTP1

/// What is decided from a request's head, before its body is read: where it comes from, how
/// large its body may be and who sends it, and how fast the body must arrive.
extension HTTPConnectionHandler {
    /// Why a request must be refused before its body is read (nil: read it), from its head
    /// alone: its size, where it comes from, its declared body, and with rules its credential.
    /// Counts the declared body in the server's `BufferBudget`, sends `100 Continue` when the
    /// client waits for it, and starts timing the body.
    func admitHead(
        _ head: HTTPRequestHead, headers: RequestHeaders, context: ChannelHandlerContext
    ) -> RESTResponse? {
        preverified = nil
        if let refusal {
            // Over the connection limits: the first request learns why, before its body is read.
            return RESTResponse.error(RESTError(.tooManyRequests, refusal, headers: [("Retry-After", "1")]))
        }
        if head.uri.utf8.count + headers.size > 64 * 1024 {
            return RESTResponse.error(RESTError(.requestHeaderFieldsTooLarge, "the request head exceeds 64 KiB"))
        }
        let open = security.isOpen
        switch origins.decide(origin: headers.origin, host: headers.host, open: open) {
        case .allowed(let value):
            allowOrigin = value
        case .refused(let message):
            allowOrigin = ""
            security.limitHit(
                "cross-origin request refused", peer: remoteAddress, metadata: ["origin": "\(headers.origin ?? "-")"],
                logger: logger)
            return RESTResponse.error(RESTError(.forbidden, message))
        }
        var declared = 0
        if let text = headers.contentLength {
            // All digits, but beyond what an Int holds, is still a length: too large.
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                return RESTResponse.error(.badRequest("Content-Length must be a number of bytes"))
            }
            guard let length = Int(text), length <= configuration.maxMessageBytes else {
                return RESTResponse.error(bodyTooLarge)
            }
            declared = length
        }
        let chunked = headers.transferEncoding != nil
        if let expect = headers.expect, expect.lowercased() != "100-continue" {
            return RESTResponse.error(RESTError(.expectationFailed, "only Expect: 100-continue is understood"))
        }
        guard declared > 0 || chunked else { return nil }
        if !open {
            let (_, query) = RESTRequestParser.split(uri: head.uri)
            let credential = RESTRequestParser.credential(QueryParameters(query), headers: headers)
            let limit = security.limits.maxUnauthenticatedBodyBytes
            if let credential {
                // Verified now, before a large body is read, rather than after.
                if declared > limit || chunked {
                    let database = try? parser.database(QueryParameters(query), headers: headers)
                    let secrets = configuration.databases.settings(for: database ?? configuration.databases.defaultName)
                        .adminSecrets
                    switch security.authenticate(
                        credential, from: remoteAddress, now: clock(), logger: logger, databaseSecrets: secrets)
                    {
                    case .success(let identity): preverified = (credential, identity)
                    case .failure(let error):
                        let refused = RESTRender.failure(error, call: RESTCall(action: .getRules))
                        countRejection(refused)
                        return RESTResponse.error(refused)
                    }
                }
            } else if declared > limit {
                return unauthenticatedBodyRefusal(limit)
            } else {
                unauthenticatedBodyLimit = limit
            }
        }
        if declared > BufferBudget.smallHolding {
            guard security.buffers.hasRoom(for: declared) else { return buffersFull }
            charge.update(declared, in: security.buffers)
        }
        if headers.expect != nil {
            var interim = context.channel.allocator.buffer(capacity: 32)
            interim.writeStaticString("HTTP/1.1 100 Continue\r\n\r\n")
            stallWatch.handed(interim.readableBytes)
            context.writeAndFlush(wrapOutboundOut(interim), promise: nil)
        }
        // A body that does not arrive with its head is timed from the end of the read
        // (`channelReadComplete`): one that does costs no timer.
        bodyWindowBytes = 0
        return nil
    }

    func unauthenticatedBodyRefusal(_ limit: Int) -> RESTResponse {
        let refused = RESTError(
            .unauthorized,
            "Permission denied: without a credential a request body may not exceed \(limit) bytes (maxUnauthenticatedBodyBytes)"
        )
        countRejection(refused)
        return RESTResponse.error(refused)
    }

    var buffersFull: RESTResponse {
        security.counters.limitHits.add(1)
        let refused = RESTError(
            .serviceUnavailable,
            "the server is holding as much for its clients as it may (maxBufferedBytes); try again shortly",
            headers: [("Retry-After", "1")])
        countRejection(refused)
        return RESTResponse.error(refused)
    }

    /// Answers a request whose body will not be read and closes the connection, reading and
    /// dropping what the peer still sends for a moment first: closing with unread bytes would
    /// reset the connection, and the peer could lose the answer.
    func refuseBeforeBody(_ response: RESTResponse, head: HTTPRequestHead, context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        bodyTimer = nil
        unauthenticatedBodyLimit = nil
        preverified = nil
        charge.update(0, in: security.buffers)
        ignoringInput = true
        queued.removeAll()
        state = .closed
        write(
            response, for: head, isHead: head.method == .HEAD, keepAlive: false, closeWhenWritten: false,
            context: context)
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingerTime) { context.close(promise: nil) }
        if readPaused {
            readPaused = false
            context.read()
        }
    }

    /// Starts timing a body that is still to come, unless it is timed already.
    func timeUnfinishedBody(context: ChannelHandlerContext) {
        if case .receiving = state, bodyTimer == nil { armBodyTimer(context: context) }
    }

    /// Closes a connection whose request body arrives slower than `minBodyBytesPerSecond`,
    /// judged over `ProtectionLimits.paceWindow`.
    func armBodyTimer(context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        let limits = security.limits
        bodyTimer = context.eventLoop.assumeIsolated().scheduleTask(in: limits.paceWindow) { [self] in
            bodyTimer = nil
            guard case .receiving(let head, _, _) = state, let context = self.context else { return }
            if limits.isTooSlow(bodyWindowBytes) {
                security.limitHit(
                    "closing a connection whose request body stalled", peer: remoteAddress, logger: logger)
                let slow = RESTError(
                    .requestTimeout,
                    "the request body arrived slower than \(limits.minBodyBytesPerSecond) bytes a second (minBodyBytesPerSecond)"
                )
                refuseBeforeBody(RESTResponse.error(slow), head: head, context: context)
                return
            }
            bodyWindowBytes = 0
            armBodyTimer(context: context)
        }
    }

    var bodyTooLarge: RESTError {
        RESTError(.payloadTooLarge, "the body exceeds the maximum of \(configuration.maxMessageBytes) bytes")
    }
}
