import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import NIOCore

/// The engine's answers and events, as the protocol's responses and pushes.
extension FirebaseSession {
    /// The engine's output for this session, in order, on its event loop.
    func receive(_ outputs: [Outbound]) {
        guard !ended else { return }
        for output in outputs {
            switch output {
            case .event(let sub, let body):
                if let listen = listens[sub] {
                    push(prefix: listen.prefix, body: body)
                } else if case .listen(_, let key, let query)? = pending.first(where: { !$0.isReady }) {
                    // The first data of the listen being answered.
                    let listen = register(sub: sub, key: key, query: query)
                    push(prefix: listen.prefix, body: body)
                }
            case .response(_, let body):
                answer(body)
            case .cancelled(let sub, _):
                guard let listen = listens[sub] else { continue }
                forget(sub: sub)
                send(FirebaseOutbound.listenRevoked(path: listen.key.path, query: listen.query))
            case .authRevoked(let reason):
                signedIn = false
                send(FirebaseOutbound.authRevoked(reason == "expired" ? "Auth token is expired." : reason))
            case .close:
                transport?.end(refusal: nil)
                return
            case .line, .computed:
                break  // replication output: never for this transport
            }
            if ended { return }
        }
        submitQueued()
        transport?.flush()
        transport?.pendingShrank()
    }

    /// Sends `ok` for request `number`, encoded in a buffer the session keeps.
    func sendOK(_ number: Int64) {
        scratch.removeAll(keepingCapacity: true)
        FirebaseOutbound.writeOK(number, into: &scratch)
        send(scratch)
    }

    /// Sends the session's own answers that reached the front of `pending`.
    func sendReadyReplies() {
        while case .ready(let message)? = pending.first {
            pending.removeFirst()
            send(message)
        }
    }

    @discardableResult
    func register(sub: Int, key: FirebaseListenKey, query: JSONValue?) -> Listen {
        let listen = Listen(key: key, query: query, prefix: FirebaseOutbound.pushPrefix(tag: key.tag))
        listens[sub] = listen
        subscriptionOf[key] = sub
        return listen
    }

    /// The engine's answer to the request at the front of `pending`.
    func answer(_ body: ResponseBody) {
        sendReadyReplies()
        defer { sendReadyReplies() }
        guard let entry = pending.popFirst() else {
            logger.error("an answer without a waiting request; closing the connection")
            transport?.end(refusal: nil)
            return
        }
        if case .failure(let error) = body {
            switch entry {
            case .listen(let number, let key, _):
                unlistenedEarly.remove(key)
                send(FirebaseOutbound.failure(number, error))
            case .write(let number, _), .get(let number), .auth(let number), .signOut(let number),
                .plain(let number):
                send(FirebaseOutbound.failure(number, error))
            case .unsubscribe(let number, let sub):
                forget(sub: sub)
                if let number { sendOK(number) }
            case .ready(let message):
                send(message)
            }
            return
        }
        switch entry {
        case .listen(let number, let key, let query):
            guard case .subscribed(let sub, _, let warning, _, _) = body else { return }
            if listens[sub] == nil { register(sub: sub, key: key, query: query) }
            if unlistenedEarly.remove(key) != nil, let engine, let link = sessionLink {
                subscriptionOf[key] = nil
                submit(.unsubscribe(sub: sub), pending: .unsubscribe(nil, sub: sub), engine: engine, link: link)
            }
            send(
                FirebaseOutbound.response(number) {
                    JSONWriter.writeLiteral(warning == nil ? "{}" : #"{"w":["no_index"]}"#, into: &$0)
                })
        case .write(let number, let stalePath):
            if case .stale(let current) = body, let path = stalePath {
                // The client retries the transaction on what it holds: the current value first.
                send(FirebaseOutbound.put(current, at: path))
                send(
                    FirebaseOutbound.response(number, status: "datastale") {
                        JSONWriter.writeString("the data changed since the transaction read it", into: &$0)
                    })
            } else {
                sendOK(number)
            }
        case .get(let number):
            send(
                FirebaseOutbound.response(number) { bytes in
                    switch body {
                    case .value(let node, _, _): node.writeJSON(into: &bytes, format: .export)
                    case .window(let result, _, _, _): result.writeJSON(into: &bytes, format: .export)
                    default: JSONWriter.writeLiteral("null", into: &bytes)
                    }
                })
        case .auth(let number):
            send(
                FirebaseOutbound.response(number) { bytes in
                    guard case .authenticated(let identity?, _) = body, !identity.isAdmin else {
                        JSONWriter.writeLiteral(#"{"auth":null,"admin":true}"#, into: &bytes)
                        return
                    }
                    JSONWriter.writeLiteral(#"{"auth":"#, into: &bytes)
                    identity.claims.serialize(into: &bytes)
                    // The token's own expiry, in seconds, as Firebase answers.
                    JSONWriter.writeLiteral(#","expires":"#, into: &bytes)
                    if let expiry = identity.claims["exp"], expiry.isNumber {
                        expiry.serialize(into: &bytes)
                    } else {
                        JSONWriter.writeLiteral("null", into: &bytes)
                    }
                    bytes.append(UInt8(ascii: "}"))
                })
        case .signOut(let number):
            send(
                FirebaseOutbound.response(number) { JSONWriter.writeString("unauthenticated", into: &$0) })
        case .plain(let number):
            sendOK(number)
        case .unsubscribe(let number, let sub):
            forget(sub: sub)
            if let number { sendOK(number) }
        case .ready(let message):
            send(message)
        }
    }

    /// A push: the listen's prefix, then the body shared by every listener of the view.
    func push(prefix: [UInt8], body: ByteBuffer) {
        transport?.send(prefix: prefix, body: body)
    }
}
