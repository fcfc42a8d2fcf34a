import HearthCore
import NIOCore
import NIOHTTP1

/// `GET /.lp`: Firebase's long-polling transport (docs/firebase-sdk.md, "Long polling"), which
/// browsers use when a WebSocket once failed. The request starts a session (`start=t`), carries
/// segments of the client's messages and waits for the server's (`id`, `pw`), fetches the frame
/// that reports the page leaving (`dframe=t`), or reports it (`disconn=t`). The session
/// (`LongPollSession`) lives on the loop of the request that started it; the connection waits in
/// `polling` until the session answers.
extension HTTPConnectionHandler {
    /// Whether a request target is the long-polling endpoint (with any query).
    static func isFirebaseLongPollPath(_ uri: String) -> Bool {
        uri == "/.lp" || uri.hasPrefix("/.lp?")
    }

    func serveLongPoll(head: HTTPRequestHead, headers: RequestHeaders, context: ChannelHandlerContext) {
        func refuse(_ error: RESTError) {
            countRejection(error)
            finish(RESTResponse.error(error), head: head, call: nil, context: context)
        }
        let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        let parameters = QueryParameters(query)
        guard head.method == .GET || (head.method == .POST && parameters["disconn"] != nil) else {
            return refuse(RESTError(.methodNotAllowed, "/.lp is read with GET", headers: [("Allow", "GET")]))
        }
        if let refusal = longPollOriginRefusal(head: head, headers: headers) { return refuse(refusal) }

        if parameters["start"] != nil {
            return startLongPoll(parameters: parameters, head: head, headers: headers, context: context)
        }
        guard let id = parameters["id"]?.raw, let password = parameters["pw"]?.raw,
            let entry = longPolls.entry(id: id, password: password)
        else {
            // The same answer for an unknown id and a wrong password.
            return refuse(RESTError(.notFound, "no such long-polling session"))
        }
        if parameters["dframe"] != nil {
            var response = RESTResponse(status: .ok, body: LongPollScript.disconnectFrame)
            response.contentType = "text/html; charset=utf-8"
            return finish(response, head: head, call: nil, context: context)
        }
        if parameters["disconn"] != nil {
            entry.loop.execute { entry.session.value.disconnect() }
            var response = RESTResponse(status: .ok)
            response.contentType = LongPollScript.contentType
            return finish(response, head: head, call: nil, context: context)
        }
        var segments: [LongPollSegment] = []
        var index = 0
        while let number = parameters["seg\(index)"].flatMap({ Int($0.raw) }) {
            guard let total = parameters["ts\(index)"].flatMap({ Int($0.raw) }), let data = parameters["d\(index)"]
            else { return refuse(.badRequest("a segment needs ts and d")) }
            segments.append(LongPollSegment(number: number, total: total, data: Array(data.plusKept.utf8)))
            index += 1
        }
        state = .polling(head)
        let respond = longPollResponder(context: context)
        let carried = segments
        entry.loop.execute { entry.session.value.poll(carried, respond: respond) }
    }

    func startLongPoll(
        parameters: QueryParameters, head: HTTPRequestHead, headers: RequestHeaders, context: ChannelHandlerContext
    ) {
        func refuse(_ error: RESTError) {
            countRejection(error)
            finish(RESTResponse.error(error), head: head, call: nil, context: context)
        }
        // The callback number goes into the answer's script: digits and letters only.
        guard let callback = parameters["cb"]?.raw, LongPollScript.isPlain(callback, maxLength: 24) else {
            return refuse(.badRequest("start needs a callback number cb"))
        }
        let databaseName: String?
        do {
            databaseName = try parser.database(parameters, headers: headers)
        } catch {
            return refuse(error)
        }
        let session = FirebaseSession(
            id: longPolls.connectionIDs.next(), loop: context.eventLoop, databases: databases,
            databaseName: databaseName == databases.defaultName.text ? nil : databaseName,
            host: headers.host ?? configuration.host, remoteAddress: remoteAddress, writeLimiter: writeLimiter,
            configuration: configuration, security: security, logger: logger, clock: clock)
        let polling = LongPollSession(session: session, registry: longPolls)
        let entry = LongPollRegistry.Entry(
            loop: context.eventLoop, password: polling.password, address: remoteAddress,
            session: NIOLoopBound(polling, eventLoop: context.eventLoop))
        guard longPolls.add(id: polling.id, sessionID: session.sessionID, entry: entry) else {
            security.limitHit(
                "long-polling sessions at their limit", peer: remoteAddress,
                metadata: ["maxConnections": "\(longPolls.capacity)"], logger: logger)
            return refuse(
                RESTError(
                    .serviceUnavailable,
                    "too many long-polling sessions (maxConnections, maxConnectionsPerAddress)",
                    headers: [("Retry-After", "1")]))
        }
        state = .polling(head)
        polling.begin(
            callback: String(callback), respond: longPollResponder(context: context), channel: context.channel)
    }

    /// Hands the session's answer back to this connection, on its loop.
    func longPollResponder(context: ChannelHandlerContext) -> LongPollResponder {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        return { reply in loop.execute { bound.value.finishLongPoll(reply) } }
    }

    func finishLongPoll(_ reply: LongPollReply) {
        guard case .polling(let head) = state, let context else { return }
        var response = RESTResponse(status: reply.status, body: reply.body)
        response.contentType = reply.contentType
        finish(response, head: head, call: nil, context: context)
    }

    /// Long polling loads scripts, which browsers fetch without an `Origin`: in open mode the page
    /// is then known by its `Referer`, and a browser request that names neither (a cross-site
    /// fetch with `Sec-Fetch-Site` but no referrer) is refused, as the WebSocket is.
    func longPollOriginRefusal(head: HTTPRequestHead, headers: RequestHeaders) -> RESTError? {
        guard security.isOpen, headers.origin == nil else { return nil }
        var origin: String?
        if let referer = head.headers.first(name: "referer") {
            let bytes = Array(referer.utf8)
            if let schemeEnd = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[schemeEnd...].starts(with: "://".utf8) {
                let rest = bytes[(schemeEnd + 3)...]
                let end = rest.firstIndex {
                    $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
                }
                origin = String(decoding: bytes[..<(end ?? bytes.endIndex)], as: UTF8.self)
            }
        }
        if let origin {
            if case .refused(let reason) = origins.decide(origin: origin, host: headers.host, open: true) {
                security.limitHit(
                    "cross-origin request refused", peer: remoteAddress, metadata: ["origin": "\(origin)"],
                    logger: logger)
                return RESTError(.forbidden, reason)
            }
            return nil
        }
        if let site = head.headers.first(name: "sec-fetch-site")?.lowercased(), site != "same-origin", site != "none" {
            return RESTError(
                .forbidden,
                "this server is open (no rules): a browser's long-polling request must show its page (Origin or Referer)"
            )
        }
        return nil
    }
}
