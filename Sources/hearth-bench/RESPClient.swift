import NIOCore

/// Redis's side of the load generator: requests as RESP commands, replies decoded and sorted into
/// responses and pub/sub messages.
enum RESP {
    static func encode(_ request: BenchRequest, into buffer: inout ByteBuffer) {
        switch request {
        case .set(let key, let value):
            writeCommand(["SET", name(key), String(value)], into: &buffer)
        case .subscribe(let key):
            writeCommand(["SUBSCRIBE", name(key)], into: &buffer)
        case .publish(let key, let value):
            writeCommand(["PUBLISH", name(key), String(value)], into: &buffer)
        case .publishTimestamp(let key):
            encode(.publish(key: key, value: monotonicNanoseconds()), into: &buffer)
        case .storeLeaves(let key, let range):
            var arguments = ["HSET", name(key)]
            arguments.reserveCapacity(2 + 2 * range.count)
            for i in range {
                arguments.append(leafKey(i))
                arguments.append(String(i))
            }
            writeCommand(arguments, into: &buffer)
        case .ping:
            writeCommand(["PING"], into: &buffer)
        case .auth(let token):
            writeCommand(["AUTH", token], into: &buffer)
        }
    }

    static func name(_ key: [String]) -> String { key.joined(separator: ":") }

    /// A command as an array of bulk strings.
    static func writeCommand(_ arguments: [String], into buffer: inout ByteBuffer) {
        buffer.writeString("*\(arguments.count)\r\n")
        for argument in arguments {
            buffer.writeString("$\(argument.utf8.count)\r\n")
            buffer.writeString(argument)
            buffer.writeString("\r\n")
        }
    }
}

/// One RESP2 reply.
enum RESPValue: Sendable {
    case simpleString(ByteBuffer)
    case error(ByteBuffer)
    case integer(Int64)
    case bulkString(ByteBuffer?)
    case array([RESPValue]?)
}

struct RESPProtocolError: Error, CustomStringConvertible {
    var description: String
}

/// Decodes RESP2 replies. A reply that is not complete yet is left in the buffer and decoded
/// again from its start when more bytes arrive.
struct RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue

    /// The deepest array nesting accepted (Redis's own replies are at most a few levels deep).
    static let maxDepth = 16

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        var copy = buffer
        guard let value = try Self.parse(&copy, depth: 0) else { return .needMoreData }
        buffer = copy
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        return .needMoreData
    }

    /// One value from the reader index, or nil (buffer position unspecified) if incomplete.
    static func parse(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard depth <= maxDepth else { throw RESPProtocolError(description: "RESP reply nested too deeply") }
        guard let type = buffer.readInteger(as: UInt8.self), let line = readLine(&buffer) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            return .simpleString(line)
        case UInt8(ascii: "-"):
            return .error(line)
        case UInt8(ascii: ":"):
            return .integer(try integer(line))
        case UInt8(ascii: "$"):
            let length = try integer(line)
            if length < 0 { return .bulkString(nil) }
            guard buffer.readableBytes >= Int(length) + 2, let body = buffer.readSlice(length: Int(length)) else {
                return nil
            }
            buffer.moveReaderIndex(forwardBy: 2)
            return .bulkString(body)
        case UInt8(ascii: "*"):
            let count = try integer(line)
            if count < 0 { return .array(nil) }
            var elements: [RESPValue] = []
            elements.reserveCapacity(Int(min(count, 1024)))
            for _ in 0..<count {
                guard let element = try parse(&buffer, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        default:
            throw RESPProtocolError(description: "unexpected RESP type byte \(type)")
        }
    }

    /// The bytes up to CRLF (consumed), or nil if no CRLF has arrived yet.
    static func readLine(_ buffer: inout ByteBuffer) -> ByteBuffer? {
        let view = buffer.readableBytesView
        guard let cr = view.firstIndex(of: UInt8(ascii: "\r")), cr + 1 < view.endIndex else { return nil }
        let line = buffer.readSlice(length: cr - view.startIndex)
        buffer.moveReaderIndex(forwardBy: 2)
        return line
    }

    static func integer(_ line: ByteBuffer) throws -> Int64 {
        let view = line.readableBytesView
        let negative = view.first == UInt8(ascii: "-")
        guard let magnitude = parseUnsigned(view.dropFirst(negative ? 1 : 0)), magnitude <= UInt64(Int64.max) else {
            throw RESPProtocolError(description: "malformed RESP integer \(String(buffer: line))")
        }
        return negative ? -Int64(magnitude) : Int64(magnitude)
    }
}

/// Sorts Redis replies into responses and pub/sub messages: `message` arrays are events (their
/// payload is the event); a `subscribe` confirmation is the SUBSCRIBE command's response.
final class RESPClassifier: ChannelInboundHandler {
    typealias InboundIn = RESPValue
    typealias InboundOut = BenchInbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .error(let message):
            context.fireChannelRead(wrapInboundOut(.failure(String(buffer: message))))
        case .array(let elements?) where elements.count == 3 && Self.isBulk(elements[0], "message"):
            guard case .bulkString(let payload?) = elements[2] else { return }
            context.fireChannelRead(wrapInboundOut(.event(payload)))
        default:
            context.fireChannelRead(wrapInboundOut(.success))
        }
    }

    static func isBulk(_ value: RESPValue, _ string: String) -> Bool {
        guard case .bulkString(let bytes?) = value else { return false }
        return bytes.readableBytesView.elementsEqual(string.utf8)
    }
}
