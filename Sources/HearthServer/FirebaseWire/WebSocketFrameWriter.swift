import NIOCore
import NIOWebSocket

/// The header of a server's WebSocket frame (RFC 6455 §5.2: final, unmasked), written in front
/// of its payload in the connection's outbox, so that a turn's frames leave in one buffer.
enum WebSocketFrameWriter {
    /// The longest header: 2 bytes and a 64-bit length.
    static let maxHeaderBytes = 10

    /// A whole close frame: its header, the status `code` and the `reason`.
    static func writeClose(code: WebSocketErrorCode, reason: String, into buffer: inout ByteBuffer) {
        writeHeader(.connectionClose, length: 2 + reason.utf8.count, into: &buffer)
        buffer.write(webSocketErrorCode: code)
        buffer.writeString(reason)
    }

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

/// Reads a client's WebSocket frames (RFC 6455 §5.2: masked) from the bytes received, unmasking
/// each payload where it lies, so that a message is read without a copy.
enum WebSocketFrameReader {
    enum Result {
        /// Not a whole frame yet: the bytes wait for more.
        case incomplete
        /// A frame the protocol does not allow, or one longer than the bound: close with `code`.
        case refused(WebSocketErrorCode)
        case frame(WebSocketOpcode, fin: Bool, payload: ByteBuffer)
    }

    static func next(in buffer: inout ByteBuffer, maxLength: Int) -> Result {
        guard let (first, second) = buffer.getMultipleIntegers(at: buffer.readerIndex, as: (UInt8, UInt8).self)
        else { return .incomplete }
        guard first & 0x70 == 0, second & 0x80 != 0, let opcode = WebSocketOpcode(encodedWebSocketOpcode: first & 0x0F)
        else { return .refused(.protocolError) }
        var header = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard let extended = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt16.self) else {
                return .incomplete
            }
            length = Int(extended)
            header += 2
        } else if length == 127 {
            guard let extended = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt64.self) else {
                return .incomplete
            }
            guard extended <= UInt64(maxLength) else { return .refused(.messageTooLarge) }
            length = Int(extended)
            header += 8
        }
        guard length <= maxLength else { return .refused(.messageTooLarge) }
        // Control frames are short and whole.
        if opcode.isControlOpcode, length > 125 || first & 0x80 == 0 { return .refused(.protocolError) }
        guard buffer.readableBytes >= header + 4 + length else { return .incomplete }
        let start = buffer.readerIndex + header + 4
        buffer.withUnsafeMutableReadableBytes { bytes in
            let key = (bytes[header], bytes[header + 1], bytes[header + 2], bytes[header + 3])
            var index = header + 4
            var offset = 0
            while offset < length {
                switch offset & 3 {
                case 0: bytes[index] ^= key.0
                case 1: bytes[index] ^= key.1
                case 2: bytes[index] ^= key.2
                default: bytes[index] ^= key.3
                }
                index += 1
                offset += 1
            }
        }
        let payload = buffer.getSlice(at: start, length: length) ?? ByteBuffer()
        buffer.moveReaderIndex(forwardBy: header + 4 + length)
        return .frame(opcode, fin: first & 0x80 != 0, payload: payload)
    }
}
