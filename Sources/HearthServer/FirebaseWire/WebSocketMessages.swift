import HearthProtocol
import NIOCore
import NIOWebSocket

/// What a client's bytes on a WebSocket come to (RFC 6455, and Firebase's frame counts,
/// `FirebaseFrameAssembler`): whole messages, pings, a close, or a violation to close for. Both
/// of Firebase's WebSocket handlers read with one, on their connection's event loop.
struct WebSocketMessages {
    enum Event {
        /// A whole message; a single frame's payload is the received bytes themselves.
        case message(ByteBuffer)
        /// A message over `maxMessageBytes`, dropped as it arrived: its first bytes.
        case oversized(prefix: [UInt8])
        /// A ping: answer with a pong of this payload.
        case ping(ByteBuffer)
        /// The client closed, or broke the protocol: close with this code.
        case close(WebSocketErrorCode)
    }

    private let maxMessageBytes: Int
    private var assembler: FirebaseFrameAssembler
    /// The start of a frame still arriving.
    private var held: ByteBuffer?
    /// A text message that arrives in several WebSocket fragments.
    private var fragments: [UInt8] = []
    private var collectingFragments = false

    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
        assembler = FirebaseFrameAssembler(maxMessageBytes: maxMessageBytes)
    }

    /// The largest frame read: a message may come whole in one frame.
    private var maxFrameBytes: Int { max(maxMessageBytes, 1 << 16) }

    /// Reads the frames `bytes` completes, handing each event to `handle` in order, and stops
    /// after a `close`; the start of a frame still arriving waits for the next bytes.
    mutating func read(_ received: ByteBuffer, _ handle: (Event) -> Void) {
        var bytes = received
        if var start = held.take(), start.readableBytes > 0 {
            start.discardReadBytes()
            start.writeBuffer(&bytes)
            bytes = start
        }
        while true {
            switch WebSocketFrameReader.next(in: &bytes, maxLength: maxFrameBytes) {
            case .incomplete:
                held = bytes.readableBytes > 0 ? bytes : nil
                return
            case .refused(let code):
                return handle(.close(code))
            case .frame(let opcode, let fin, let payload):
                if let close = frame(opcode, fin: fin, payload: payload, handle) {
                    return handle(.close(close))
                }
            }
        }
    }

    /// One frame, its payload unmasked; a close code ends the reading.
    private mutating func frame(
        _ opcode: WebSocketOpcode, fin: Bool, payload: ByteBuffer, _ handle: (Event) -> Void
    ) -> WebSocketErrorCode? {
        switch opcode {
        case .text:
            collectingFragments = !fin
            if fin, !assembler.isCollecting, payload.readableBytes > 6, payload.readableBytes <= maxMessageBytes {
                // A whole message in one frame, the usual case: read where it lies.
                handle(.message(payload))
            } else if fin {
                take(Array(buffer: payload), handle)
            } else {
                fragments = Array(buffer: payload)
            }
        case .continuation:
            guard collectingFragments else { return .protocolError }
            guard fragments.count + payload.readableBytes <= maxMessageBytes else { return .messageTooLarge }
            fragments.append(contentsOf: payload.readableBytesView)
            if fin {
                collectingFragments = false
                let message = fragments
                fragments = []
                take(message, handle)
            }
        case .binary:
            return .unacceptableData
        case .ping:
            handle(.ping(payload))
        case .connectionClose:
            return .normalClosure
        default:
            break
        }
        return nil
    }

    /// A whole text frame of Firebase's: a message, a piece of one, or a keep-alive.
    private mutating func take(_ frame: [UInt8], _ handle: (Event) -> Void) {
        switch assembler.take(frame) {
        case .pending, .keepAlive: break
        case .message(let message): handle(.message(ByteBuffer(bytes: message)))
        case .oversized(let prefix): handle(.oversized(prefix: prefix))
        }
    }
}
