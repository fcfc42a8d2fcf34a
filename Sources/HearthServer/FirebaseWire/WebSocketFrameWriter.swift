import NIOCore
import NIOWebSocket

/// The header of a server's WebSocket frame (RFC 6455 §5.2: final, unmasked), written in front
/// of its payload in the connection's outbox, so that a turn's frames leave in one buffer.
enum WebSocketFrameWriter {
    /// The longest header: 2 bytes and a 64-bit length.
    static let maxHeaderBytes = 10

    static func writeHeader(_ opcode: WebSocketOpcode, length: Int, into buffer: inout ByteBuffer) {
        let first = 0x80 | UInt8(webSocketOpcode: opcode)
        switch length {
        case ..<126:
            buffer.writeMultipleIntegers(first, UInt8(length))
        case ...0xFFFF:
            buffer.writeMultipleIntegers(first, UInt8(126), UInt16(length))
        default:
            buffer.writeMultipleIntegers(first, UInt8(127), UInt64(length))
        }
    }
}
