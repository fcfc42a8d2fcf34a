import HearthCore
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// `GET /.ws`: the WebSocket upgrade to Firebase's realtime protocol (docs/firebase-sdk.md). The
/// connection's HTTP handler answers `101`, hands its place under the connection limits to a
/// `FirebaseSocketHandler`, and leaves the pipeline with the HTTP decoder.
extension HTTPConnectionHandler {
    /// Whether a request target is the WebSocket endpoint (with any query).
    static func isFirebaseSocketPath(_ uri: String) -> Bool {
        uri == "/.ws" || uri.hasPrefix("/.ws?")
    }

    func upgradeToFirebase(head: HTTPRequestHead, headers: RequestHeaders, context: ChannelHandlerContext) {
        func refuse(_ error: RESTError) {
            countRejection(error)
            finish(RESTResponse.error(error), head: head, call: nil, context: context)
        }
        let fields = head.headers
        guard head.method == .GET, fields[canonicalForm: "upgrade"].contains(where: { $0.lowercased() == "websocket" })
        else {
            return refuse(
                RESTError(
                    .badRequest,
                    "/.ws is Firebase's realtime protocol: connect with a WebSocket (a Firebase SDK does)"))
        }
        guard let key = fields.first(name: "sec-websocket-key"), !key.isEmpty,
            fields.first(name: "sec-websocket-version") == "13"
        else {
            return refuse(
                RESTError(
                    .upgradeRequired, "a WebSocket upgrade needs Sec-WebSocket-Key and Sec-WebSocket-Version 13",
                    headers: [("Sec-WebSocket-Version", "13")]))
        }
        // Browsers do not guard WebSockets with CORS: an open server lets only its own pages,
        // loopback pages and `allowedOrigins` connect (`OriginPolicy`).
        if case .refused(let reason) = origins.decide(
            origin: headers.origin, host: headers.host, open: security.isOpen)
        {
            return refuse(RESTError(.forbidden, reason))
        }
        let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        let databaseName: String?
        do {
            databaseName = try parser.database(QueryParameters(query), headers: headers)
        } catch {
            return refuse(error)
        }
        guard queued.isEmpty else {
            return refuse(.badRequest("a WebSocket upgrade must be the last request on its connection"))
        }
        // `s`: the WebSocket upgrades a long-polling session (`LongPollSession`).
        let upgraded = QueryParameters(query)["s"].map { longPolls.entry(sessionID: $0.raw) }
        if case .some(nil) = upgraded { return refuse(RESTError(.notFound, "no such long-polling session")) }

        var accept = SHA1()
        accept.update(key.utf8)
        accept.update("258EAFA5-E914-47DA-95CA-C5AB0DC85B11".utf8)
        var response = context.channel.allocator.buffer(capacity: 160)
        response.writeString(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
                + base64Encode(accept.finalize()) + "\r\n\r\n")
        context.writeAndFlush(wrapOutboundOut(response), promise: nil)

        // Each socket handler reads and writes its frames itself (`WebSocketMessages`,
        // `WebSocketFrameWriter`).
        let socket: any ChannelHandler
        if case .some(.some(let joined)) = upgraded {
            socket = LongPollSocketHandler(
                session: joined, id: id, configuration: configuration, security: security, registry: registry,
                admission: admission, logger: logger)
        } else {
            let session = FirebaseSession(
                id: id, loop: context.eventLoop, databases: databases,
                databaseName: databaseName == databases.defaultName.text ? nil : databaseName,
                host: headers.host ?? configuration.host, remoteAddress: remoteAddress, writeLimiter: writeLimiter,
                configuration: configuration, security: security, logger: logger, clock: clock)
            socket = FirebaseSocketHandler(session: session, admission: admission, registry: registry)
        }
        retireForUpgrade()
        let pipeline = context.pipeline.syncOperations
        do {
            try pipeline.addHandler(socket, position: .after(self))
            let decoder = try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            pipeline.removeHandler(context: context, promise: nil)
            pipeline.removeHandler(context: decoder, promise: nil)
        } catch {
            logger.error("WebSocket upgrade failed", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    /// Ends the connection's life as HTTP without closing it: its timers, its session on the
    /// engine, its database and its registration end; its place under the connection limits goes
    /// to the WebSocket handler.
    func retireForUpgrade() {
        idleTimer?.cancel()
        keepAliveTimer?.cancel()
        stallTimer?.cancel()
        bodyTimer?.cancel()
        charge.release(from: security.buffers)
        connectionMetrics.connectionClosed(kind: .http)
        leaveDatabase()
        engine.submit(.disconnected(sessionID: id))
        registry.remove(id: id)
        admission = ConnectionAdmission()
        state = .closed
    }
}
