import NIOCore
import NIOWebSocket

/// The header of a server's WebSocket frame (RFC 6455 §5.2: final, unmasked), written in front
/// of its payload in the connection's outbox, so that a turn's frames leave in one buffer.
enum WebSocketFrameWriter {
    static func writeHeader(_ opcode: WebSocketOpcode, length: Int, into buffer: inout ByteBuffer) {
        buffer.writeInteger(0x80 | UInt8(webSocketOpcode: opcode))
        switch length {
        case ..<126:
            buffer.writeInteger(UInt8(length))
        case ...0xFFFF:
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(length))
        default:
            buffer.writeInteger(UInt8(127))
            buffer.writeInteger(UInt64(length))
        }
    }
}
