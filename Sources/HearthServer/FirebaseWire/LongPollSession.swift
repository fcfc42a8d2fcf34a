import HearthCore
import HearthJSON
import HearthProtocol
import Logging
import NIOCore

/// A Firebase session carried by long polling (docs/firebase-sdk.md, "Long polling"), and later,
/// when the client upgrades, by a WebSocket. Confined to the event loop of the request that
/// started it; every other `/.lp` request, and the upgrading WebSocket, hop to that loop.
///
/// The client's messages come base64-encoded in numbered segments spread over requests; they are
/// put back together in order and bounded by `maxMessageBytes`. The server's messages wait in a
/// queue (bounded by `maxOutboundBytes`: a client that does not fetch them is let go) until a poll
/// takes them as one numbered packet. One poll is held while there is nothing to send, and
/// answered empty after `LongPollRegistry.holdTime`; a newer request releases an older held one.
/// A session without requests for `LongPollRegistry.expiry` ends, and its onDisconnect operations
/// run.
///
/// The upgrade: a WebSocket naming the hello's session id joins as the secondary transport. The
/// server opens the exchange there with the switch acknowledgement `a` and answers its pings
/// itself; the client's other messages there wait until the client's end-of-transmission `n`
/// arrives by long polling, after everything the client sent that way. Then the server sends `n`
/// as the last long-polling message, closes long polling, and everything goes over the WebSocket,
/// so nothing is lost or reordered either way.
final class LongPollSession: FirebaseTransport {
    let session: FirebaseSession
    let id: String
    let password: String
    let registry: LongPollRegistry
    let loop: any EventLoop
    let logger: Logger

    /// Messages for the client that no poll has taken yet.
    var queue: [[UInt8]] = []
    var queuedBytes = 0
    /// The number of the next packet (the hello travels as packet 0).
    var nextPacket = 0
    /// The `start=t` request with its callback number, until the hello can answer it.
    var starting: (callback: String, respond: LongPollResponder)?
    /// Polls waiting for something to send, oldest first.
    var held: [(respond: LongPollResponder, since: NIODeadline)] = []
    var holdTimer: Scheduled<Void>?
    var expiryTimer: Scheduled<Void>?
    var lastRequest = NIODeadline.now()

    /// Segments that arrived ahead of the one expected next.
    var segments: [Int: LongPollSegment] = [:]
    var segmentBytes = 0
    var nextSegment = 0
    var ended = false

    /// The WebSocket of an upgrade, before and after the switch.
    var secondary: FirebaseUpgradeSocket?
    /// Everything goes over `secondary` now.
    var switched = false
    /// Messages that came over the secondary before the switch.
    var secondaryEarly: [[UInt8]] = []
    var secondaryEarlyBytes = 0
    /// Output for the secondary, handed over at each flush.
    var secondaryOut: [[UInt8]] = []
    /// The secondary stopped reading: too many requests wait for the engine.
    var secondaryPaused = false

    init(session: FirebaseSession, registry: LongPollRegistry) {
        self.session = session
        self.id = FirebaseSession.unguessableID()
        self.password = FirebaseSession.unguessableID()
        self.registry = registry
        self.loop = session.loop
        self.logger = session.logger
    }

    // MARK: Requests

    /// `start=t`: leases the database; the hello answers `respond`.
    func begin(callback: String, respond: @escaping LongPollResponder, channel: any Channel) {
        starting = (callback, respond)
        let bound = NIOLoopBound(self, eventLoop: loop)
        let loop = self.loop
        registry.connections.add(
            id: session.id, channel: channel,
            beginShutdown: { loop.execute { bound.value.end(refusal: nil) } })
        session.databases.defaultDatabase.engine.metrics.connectionOpened(kind: .firebase)
        armExpiry()
        session.start(transport: self) { loop.execute { bound.value.end(refusal: nil) } }
    }

    /// A poll, with the segments it carries.
    func poll(_ carried: [LongPollSegment], respond: @escaping LongPollResponder) {
        guard !ended, !switched else { return respond(.closed) }
        lastRequest = .now()
        for segment in carried where !ended { take(segment) }
        session.submitQueued()
        guard !ended else { return respond(.closed) }
        guard !switched else {
            // The request that carried `n` (answered with the last packet and `close`).
            return respond(LongPollReply(body: drain(closing: true)))
        }
        // A newer poll releases the older ones.
        for old in held { old.respond(LongPollReply(body: drain(closing: false))) }
        held = []
        if queue.isEmpty {
            held.append((respond, .now()))
            armHoldTimer()
        } else {
            respond(LongPollReply(body: drain(closing: false)))
        }
    }

    /// `disconn=t`: the page left. A session already carried by its WebSocket stays.
    func disconnect() {
        guard !switched else { return }
        terminate()
    }

    // MARK: Segments

    func take(_ segment: LongPollSegment) {
        guard segment.number >= nextSegment, segments[segment.number] == nil else { return }
        let maxEncoded = session.configuration.maxMessageBytes / 3 * 4 + 8
        // Each segment is counted with a little overhead, so that many empty ones are bounded too.
        segmentBytes += segment.data.count + Self.segmentOverhead
        guard segmentBytes <= maxEncoded + 65_536 else {
            logger.debug("long polling: too much data ahead of a missing segment; ending the session")
            return terminate()
        }
        segments[segment.number] = segment
        while let first = segments[nextSegment], !ended {
            let total = first.total
            guard total >= 1, total <= maxEncoded else { return terminate() }
            if total > 1, first.data.count * (total - 1) > maxEncoded {
                // Too long to keep: answered from its start, the rest dropped as it comes.
                dropSegments(nextSegment..<nextSegment + total)
                session.receivedOversized(prefix: LongPollScript.decodeBase64(Array(first.data.prefix(88))) ?? [])
                continue
            }
            if total > 1 {
                guard (1..<total).allSatisfy({ segments[nextSegment + $0] != nil }) else { return }
            }
            var encoded: [UInt8] = []
            for index in 0..<total {
                if let part = segments[nextSegment + index] { encoded += part.data }
            }
            dropSegments(nextSegment..<nextSegment + total)
            guard encoded.count <= maxEncoded, let message = LongPollScript.decodeBase64(encoded),
                message.count <= session.configuration.maxMessageBytes
            else {
                session.receivedOversized(prefix: LongPollScript.decodeBase64(Array(encoded.prefix(88))) ?? [])
                continue
            }
            receivedOverPolling(message)
        }
    }

    static let segmentOverhead = 64

    /// Forgets the segments of `range` and expects the one after it.
    func dropSegments(_ range: Range<Int>) {
        let numbers = range.count <= segments.count ? Array(range) : segments.keys.filter { range.contains($0) }
        for number in numbers {
            if let part = segments.removeValue(forKey: number) {
                segmentBytes -= part.data.count + Self.segmentOverhead
            }
        }
        nextSegment = range.upperBound
    }

    /// A whole message that came by long polling.
    func receivedOverPolling(_ message: [UInt8]) {
        if Self.isControl(message, "n") {
            if secondary != nil { switchToSecondary() }
            return
        }
        session.received(message)
    }

    // MARK: Output (FirebaseTransport)

    func send(_ message: [UInt8]) {
        guard !ended else { return }
        if switched {
            secondaryOut.append(message)
            return
        }
        queue.append(message)
        queuedBytes += message.count
        if queuedBytes > session.configuration.maxOutboundBytes {
            logger.warning(
                "closing a slow consumer", metadata: ["pendingBytes": "\(queuedBytes)", "reason": "maxOutboundBytes"])
            terminate()
        }
    }

    func send(prefix: [UInt8], body: ByteBuffer) {
        var message = prefix
        message.append(contentsOf: body.readableBytesView)
        send(message)
    }

    func flush() {
        guard !ended else { return }
        if switched {
            guard !secondaryOut.isEmpty, let secondary else { return }
            let batch = secondaryOut
            secondaryOut = []
            secondary.deliver(batch)
            return
        }
        guard !queue.isEmpty else { return }
        if let start = starting {
            starting = nil
            let packets = drain(closing: false)
            start.respond(
                LongPollReply(
                    body: LongPollScript.start(callback: start.callback, id: id, password: password, packets: packets)))
        } else if !held.isEmpty {
            let poll = held.removeFirst()
            poll.respond(LongPollReply(body: drain(closing: false)))
        }
    }

    func end(refusal: String?) {
        guard !ended else { return }
        if switched {
            if let refusal { secondaryOut.append(FirebaseOutbound.control("s", refusal)) }
            flush()
            secondary?.close()
            terminate()
            return
        }
        // `s` (shutdown): the client does not come back.
        if let refusal { queue.append(FirebaseOutbound.control("s", refusal)) }
        terminate()
    }

    func pendingShrank() {
        guard switched, secondaryPaused, let secondary,
            session.pending.count < session.configuration.maxPipelinedRequests / 2
        else { return }
        secondaryPaused = false
        secondary.pause(false)
    }

    /// The queued messages as one packet (nothing when the queue is empty), then `close` when
    /// `closing`.
    func drain(closing: Bool) -> [UInt8] {
        var body: [UInt8] = []
        if !queue.isEmpty {
            body = LongPollScript.packet(nextPacket, queue)
            nextPacket += 1
            queue = []
            queuedBytes = 0
        }
        if closing { body += LongPollScript.close(lastPacket: max(nextPacket - 1, 0)) }
        return body
    }

    /// Ends the session: the held polls get what is queued and `close`, the engine runs the
    /// session's onDisconnect operations, and the registry forgets it.
    func terminate() {
        guard !ended else { return }
        let body = drain(closing: true)
        if let start = starting {
            starting = nil
            start.respond(
                LongPollReply(
                    body: LongPollScript.start(callback: start.callback, id: id, password: password, packets: body)))
        } else if let first = held.first {
            first.respond(LongPollReply(body: body))
            for other in held.dropFirst() { other.respond(.closed) }
        }
        held = []
        ended = true
        holdTimer?.cancel()
        expiryTimer?.cancel()
        if !switched { secondary?.close() }
        secondary = nil
        session.end()
        session.databases.defaultDatabase.engine.metrics.connectionClosed(kind: .firebase)
        registry.connections.remove(id: session.id)
        registry.remove(id: id, sessionID: session.sessionID)
    }

    // MARK: Timers

    func armHoldTimer() {
        guard holdTimer == nil, let oldest = held.first else { return }
        holdTimer = loop.assumeIsolated().scheduleTask(deadline: oldest.since + LongPollRegistry.holdTime) {
            [self] in
            holdTimer = nil
            let now = NIODeadline.now()
            while let first = held.first, first.since + LongPollRegistry.holdTime <= now {
                held.removeFirst()
                first.respond(.empty)
            }
            armHoldTimer()
        }
    }

    func armExpiry() {
        expiryTimer = loop.assumeIsolated().scheduleTask(deadline: lastRequest + LongPollRegistry.expiry) { [self] in
            guard !ended, !switched else { return }
            if NIODeadline.now() >= lastRequest + LongPollRegistry.expiry {
                logger.debug("long polling: no request for a while; ending the session")
                terminate()
            } else {
                armExpiry()
            }
        }
    }

    // MARK: Upgrade

    /// A WebSocket named this session: it becomes the secondary transport, unless there is one.
    func attach(_ socket: FirebaseUpgradeSocket) -> Bool {
        guard !ended, !switched, secondary == nil else { return false }
        secondary = socket
        socket.deliver([LongPollScript.control("a")])
        return true
    }

    /// A message over the secondary.
    func receivedOverSecondary(_ message: [UInt8], from socket: FirebaseUpgradeSocket) {
        guard !ended, secondary === socket else { return }
        if switched {
            session.received(message)
            session.submitQueued()
            flush()
            if !secondaryPaused, session.pending.count >= session.configuration.maxPipelinedRequests {
                secondaryPaused = true
                socket.pause(true)
            }
            return
        }
        if Self.isControl(message, "p") {
            socket.deliver([FirebaseOutbound.pong])
        } else if Self.isControl(message, "a") {
            // The client's switch acknowledgement: its `n` follows by long polling.
        } else {
            secondaryEarly.append(message)
            secondaryEarlyBytes += message.count
            if secondaryEarly.count > session.configuration.maxPipelinedRequests
                || secondaryEarlyBytes > session.configuration.maxMessageBytes
            {
                logger.debug("long polling: too much over the WebSocket before the switch; dropping it")
                secondary = nil
                secondaryEarly = []
                secondaryEarlyBytes = 0
                socket.close()
            }
        }
    }

    func receivedOversizedOverSecondary(prefix: [UInt8], from socket: FirebaseUpgradeSocket) {
        guard !ended, secondary === socket, switched else { return }
        session.receivedOversized(prefix: prefix)
        session.submitQueued()
        flush()
    }

    /// The secondary closed: before the switch the client goes on polling; after it, the session ends.
    func secondaryClosed(_ socket: FirebaseUpgradeSocket) {
        guard secondary === socket else { return }
        if switched {
            secondary = nil
            terminate()
        } else {
            secondary = nil
            secondaryEarly = []
            secondaryEarlyBytes = 0
        }
    }

    /// The client's `n` came by long polling, after all it sent that way: the server's `n` is the
    /// last long-polling message, and the WebSocket carries the rest.
    func switchToSecondary() {
        queue.append(LongPollScript.control("n"))
        queuedBytes += 16
        switched = true
        holdTimer?.cancel()
        expiryTimer?.cancel()
        // The held polls get the rest and `close`; the request that carried `n` gets `close` too.
        if let first = held.first {
            first.respond(LongPollReply(body: drain(closing: true)))
            for other in held.dropFirst() { other.respond(.closed) }
        }
        held = []
        let early = secondaryEarly
        secondaryEarly = []
        secondaryEarlyBytes = 0
        for message in early where !ended { session.received(message) }
        session.submitQueued()
        flush()
    }

    /// Whether `message` is the control message of `type` (`{"t":"c","d":{"t":TYPE,…}}`).
    static func isControl(_ message: [UInt8], _ type: String) -> Bool {
        guard message.count < 256, let json = try? JSONParser.parse(message),
            case .string("c")? = json["t"], case .string(let control)? = json["d"]?["t"]
        else { return false }
        return control == type
    }
}
